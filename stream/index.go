package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

// indexRecord is a session's entry in the index bucket. Seq orders
// concurrent updates: a record never replaces one with a higher Seq.
type indexRecord struct {
	session.SessionInfo
	Seq uint64 `json:"seq"`
}

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
	err = b.resend(ctx, func(ctx context.Context) (err error) {
		n, err = b.putIndexOnce(ctx, rec, rev)
		return err
	}, nil)
	return n, err
}

func (b *Backend) putIndexOnce(ctx context.Context, rec indexRecord, rev uint64) (uint64, error) {
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
		if json.Unmarshal(cur.Value(), &old) == nil && old.Seq >= rec.Seq {
			return cur.Revision(), nil
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
// each. close writes what is still pending.
type indexer struct {
	b   *Backend
	job *job

	mu      sync.Mutex
	pending *indexRecord
	rev     uint64 // the revision this indexer last wrote (flush only)
}

func newIndexer(b *Backend, interval time.Duration) *indexer {
	x := &indexer{b: b}
	x.job = newJob(interval, b.cfg.RequestTimeout, func(ctx context.Context, _ string) error { return x.flush(ctx) })
	return x
}

func (x *indexer) touch(info session.SessionInfo, seq uint64) {
	x.mu.Lock()
	x.pending = &indexRecord{SessionInfo: info, Seq: seq}
	x.mu.Unlock()
	x.job.trigger("")
}

func (x *indexer) flush(ctx context.Context) error {
	x.mu.Lock()
	rec := x.pending
	x.pending = nil
	x.mu.Unlock()
	if rec == nil {
		return nil
	}
	rev, err := x.b.putIndex(ctx, *rec, x.rev)
	if err != nil {
		x.mu.Lock()
		if x.pending == nil {
			x.pending = rec // the next run or close retries
		}
		x.mu.Unlock()
		return err
	}
	x.rev = rev
	return nil
}

// close stops the goroutine and writes what is pending.
func (x *indexer) close(ctx context.Context) error {
	x.job.close()
	return x.flush(ctx)
}

// Exists reports whether session id exists, from its index record (one
// read, never the session's messages).
func (b *Backend) Exists(ctx context.Context, id string) (bool, error) {
	if err := ValidateSessionID(id); err != nil {
		return false, err
	}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	_, err := b.partOf(id).kv.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return false, nil
	}
	return false, fmt.Errorf("stream: exists %s: %w", id, err)
}
