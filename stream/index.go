package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/job"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// indexRecord is a session's entry in the index bucket. Seq orders
// concurrent updates: a record never replaces one with a higher Seq.
// V is its format (absent in records of releases before v0.5.0: 1).
type indexRecord struct {
	session.Listing
	Seq uint64 `json:"seq"`
	V   int    `json:"v,omitempty"`
}

// IndexVersion is the newest index record format this release reads and
// the one it writes. A record of a newer one is left as it is: listings
// pass over it, and a writer does not replace it with an older form.
const IndexVersion = 1

// newer reports whether rec is of a format newer than this release's.
func (rec indexRecord) newer() bool { return rec.V > IndexVersion }

// putIndex writes rec unless the index already holds a newer record.
// rev, when non-zero, is the record's revision the caller last wrote: the
// update is tried against it first, saving the read when nobody else
// wrote since. It returns the revision written (or found newer).
//
// Every write is conditional (a create, or an update of a revision), so
// the whole of it is sent again while its outcome is unknown.
func (b *Backend) putIndex(ctx context.Context, rec indexRecord, rev uint64) (n uint64, err error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	err = b.rq.Resend(ctx, func(ctx context.Context) (err error) {
		n, err = b.putIndexOnce(ctx, rec, rev)
		return err
	}, nil)
	return n, err
}

func (b *Backend) putIndexOnce(ctx context.Context, rec indexRecord, rev uint64) (uint64, error) {
	rec.V = IndexVersion
	val, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	if rev != 0 {
		if n, err := b.kv.Update(ctx, rec.ID, val, rev); err == nil {
			return n, nil
		}
		// Someone else wrote it (or it was deleted): compare below.
	}
	for range 8 {
		cur, err := b.kv.Get(ctx, rec.ID)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			n, err := b.kv.Create(ctx, rec.ID, val)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			return n, err
		}
		if err != nil {
			return 0, err
		}
		var old indexRecord
		if json.Unmarshal(cur.Value(), &old) == nil {
			if old.newer() {
				return 0, fmt.Errorf("stream: index of %s: %w", rec.ID, session.CheckFormat("index record", rec.ID, old.V, 0, IndexVersion))
			}
			if old.Seq >= rec.Seq {
				return cur.Revision(), nil
			}
		}
		n, err := b.kv.Update(ctx, rec.ID, val, cur.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		return n, err
	}
	return 0, fmt.Errorf("stream: index of %s: too much contention", rec.ID)
}

// indexer keeps one session's index record fresh while it is written to,
// at most once per interval, so that appends do not pay an index write
// each. The index is another raft group than the session's stream, so no
// write waits for it — not even a create: a write's only dependency is
// its partition's stream, and losing the index's leader stalls listings,
// never writers. Listings of the same backend flush what its stores have
// pending first (see pendingIndex), so a process sees its own writes
// listed. close writes what is still pending.
type indexer struct {
	b   *Backend
	job *job.Job

	mu       sync.Mutex
	pending  *indexRecord
	inflight chan struct{} // closed when the record being written is
	rev      uint64        // the revision this indexer last wrote
}

func newIndexer(b *Backend, interval time.Duration) *indexer {
	x := &indexer{b: b}
	x.job = job.New(interval, b.cfg.RequestTimeout, func(ctx context.Context, _ string) error { return x.flush(ctx) })
	x.job.Retry = true // an index out of reach is written to once it is back
	return x
}

// touch makes info at seq the record to write. The pending set changes
// under x.mu (so does a flush's removal): x is in it whenever it holds a
// record not written.
func (x *indexer) touch(info session.Listing, seq uint64) {
	x.mu.Lock()
	x.pending = &indexRecord{Listing: info, Seq: seq}
	x.b.pendingIndex.add(x)
	x.mu.Unlock()
	x.job.Trigger("")
}

// flush writes the pending record, if any; with none pending but one
// being written by another flush, it waits for that one. Concurrent
// writes are safe (a record never replaces a newer one); the wait is what
// lets a listing see the record once flush returns.
func (x *indexer) flush(ctx context.Context) error {
	x.mu.Lock()
	rec, rev := x.pending, x.rev
	if rec == nil {
		wait := x.inflight
		if wait == nil {
			x.b.pendingIndex.remove(x)
		}
		x.mu.Unlock()
		if wait == nil {
			return nil
		}
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	x.pending = nil
	done := make(chan struct{})
	x.inflight = done
	x.mu.Unlock()

	n, err := x.b.putIndex(ctx, *rec, rev)

	x.mu.Lock()
	defer x.mu.Unlock()
	close(done)
	if x.inflight == done {
		x.inflight = nil
	}
	if err != nil {
		if x.pending == nil {
			x.pending = rec // the next run or close retries
		}
		return err
	}
	x.rev = n
	if x.pending == nil {
		x.b.pendingIndex.remove(x)
	}
	return nil
}

// pendingIndex is the set of a partition's indexers holding a record not
// yet written.
type pendingIndex struct {
	mu  sync.Mutex
	set map[*indexer]struct{}
}

// maxPendingIndex bounds the set: records past it (an index unwritable
// for long, under many sessions) are left to their indexers' own turns.
const maxPendingIndex = 4096

func (p *pendingIndex) add(x *indexer) {
	p.mu.Lock()
	if p.set == nil {
		p.set = map[*indexer]struct{}{}
	}
	if len(p.set) < maxPendingIndex {
		p.set[x] = struct{}{}
	}
	p.mu.Unlock()
}

func (p *pendingIndex) remove(x *indexer) {
	p.mu.Lock()
	delete(p.set, x)
	p.mu.Unlock()
}

// flush writes every pending record now, flushConcurrency at a time,
// rather than at the indexers' next turns. Records a failure left pending
// stay so.
func (p *pendingIndex) flush(ctx context.Context) error {
	p.mu.Lock()
	xs := make([]*indexer, 0, len(p.set))
	for x := range p.set {
		xs = append(xs, x)
	}
	p.mu.Unlock()
	if len(xs) == 0 {
		return nil
	}
	errs := make([]error, len(xs))
	var g errgroup.Group
	g.SetLimit(flushConcurrency)
	for i, x := range xs {
		g.Go(func() error { errs[i] = x.flush(ctx); return nil })
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// flushConcurrency bounds the index writes one listing makes at once: up
// to maxPendingIndex may be pending.
const flushConcurrency = 16

// close stops the goroutine and writes what is pending.
func (x *indexer) close(ctx context.Context) error {
	x.job.Close()
	return x.flush(ctx)
}

// Exists reports whether session id exists: from its index record (one
// read), or, when there is none, from the stream, whose last message of
// the session the leader is asked for. A record can lag its session (one
// written on an edge node and taken in by a stream source has none until
// the index follower writes it): the stream is what says a session is
// gone.
func (b *Backend) Exists(ctx context.Context, id string) (bool, error) {
	if err := session.ValidateSessionID(id); err != nil {
		return false, err
	}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	p := b.partOf(id)
	fctx, fcancel := context.WithTimeout(ctx, b.cfg.AttemptTimeout)
	_ = p.pendingIndex.flush(fctx) // this process's creates are known
	fcancel()
	_, err := p.kv.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted):
		return false, fmt.Errorf("stream: exists %s: %w", id, err)
	}
	m, err := p.rq.LastOf(ctx, p.cfg.Stream, p.cfg.sessionSubjects(id))
	switch {
	case err == nil:
		return m != nil, nil
	case errors.Is(err, jetstream.ErrMsgNotFound), errors.Is(err, jsx.ErrNoMessages):
		return false, nil
	}
	return false, fmt.Errorf("stream: exists %s: %w", id, err)
}
