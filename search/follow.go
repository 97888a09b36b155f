package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// Indexer keeps an index current from a backend's stream: an ordered
// consumer on each partition, from the sequence the index last took in
// (kept in the index, written with the entries in one batch, so a crash
// repeats a batch at most, which indexing twice leaves unchanged), and a
// watch of the partition's session index that forgets deleted sessions.
type Indexer struct {
	x      *Index
	b      *stream.Backend
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pos     map[int]uint64 // partition -> last sequence indexed
	cons    map[int]jetstream.Consumer
	parts   map[int]followed // partition -> what its consumer follows
	lags    []time.Duration
	lagNext int
	indexed uint64
	lastErr error
	closed  bool

	// facts are sessions' header facets, by session id (under factsMu,
	// a leaf lock, never held across a request): learned from headers
	// as they pass, read from the stream for a session met mid-way.
	factsMu sync.Mutex
	facts   *lru.Cache[string, SessionFacts]
}

// followed is a partition's stream and the subjects its consumer takes.
type followed struct {
	stream   jetstream.Stream
	subjects []string
}

// maxFacts bounds the sessions whose header facets an indexer remembers.
const maxFacts = 1 << 16

// maxLags is how many recent index lags Status keeps.
const maxLags = 10000

// Follow starts indexing b's entries into x. It returns once every
// partition's consumer is made; Close stops it.
func Follow(ctx context.Context, x *Index, b *stream.Backend) (*Indexer, error) {
	ix := &Indexer{x: x, b: b, pos: map[int]uint64{}, cons: map[int]jetstream.Consumer{}, parts: map[int]followed{}, facts: lru.New[string, SessionFacts]()}
	fctx, cancel := context.WithCancel(context.Background())
	ix.cancel = cancel
	for _, p := range b.Partitions() {
		// A node started while its cluster elects leaders gets no answer
		// for a moment: retried as provisioning is, not fatal to serve.
		if err := stream.Provisioning(ctx, func(ctx context.Context) error { return ix.start(ctx, fctx, p) }); err != nil {
			cancel() // the partitions started before this one
			ix.wg.Wait()
			return nil, err
		}
	}
	return ix, nil
}

// start follows partition p: its consumer from where the index stopped,
// and its index watch, both running under fctx.
func (ix *Indexer) start(ctx, fctx context.Context, p stream.Partition) error {
	from, err := ix.position(ctx, p)
	if err != nil {
		return err
	}
	filter := p.TypeFilter(append([]session.EntryType{session.TypeSession, session.TypeUsage, session.TypeLabel}, indexedTypes...)...)
	cons, err := p.Stream().OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: filter.Subjects,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from + 1,
	})
	if err != nil {
		return fmt.Errorf("search: follow partition %d: %w", p.Index(), err)
	}
	// Bounded by bytes, not only by count: 500 entries of a fork's were
	// 50 MB waiting to be read.
	it, err := cons.Messages(jetstream.PullMaxBytes(pullBytes))
	if err != nil {
		return fmt.Errorf("search: follow partition %d: %w", p.Index(), err)
	}
	// Under fctx, not ctx: a watcher ends with the context it was made
	// with, and ctx is one attempt's.
	w, err := p.WatchIndex(fctx)
	if err != nil {
		it.Stop()
		return err
	}
	ix.mu.Lock()
	ix.pos[p.Index()], ix.cons[p.Index()] = from, cons
	ix.parts[p.Index()] = followed{stream: p.Stream(), subjects: filter.Subjects}
	ix.mu.Unlock()
	ix.wg.Add(2)
	go ix.follow(fctx, p, it, filter)
	go ix.forget(fctx, w)
	return nil
}

// pullBytes bounds what a follower's consumer holds ahead of the indexer:
// above the largest message (the server's max payload, 8 MiB embedded),
// which a smaller bound would never deliver.
const pullBytes = 16 << 20

// posKey is where the index keeps a partition's position.
func posKey(p stream.Partition) []byte {
	return []byte("pos/" + p.Stream().CachedInfo().Config.Name)
}

// position is the last sequence of p the index holds; 0 when none, or
// when the stream no longer reaches it (made again): then from the start.
func (ix *Indexer) position(ctx context.Context, p stream.Partition) (uint64, error) {
	var pos uint64
	err := ix.x.read(func() error {
		v, err := ix.x.idx.GetInternal(posKey(p))
		if err == nil && len(v) == 8 {
			pos = binary.BigEndian.Uint64(v)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	info, err := p.Stream().Info(ctx) // not the cached one: it may predate every write
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	if pos > info.State.LastSeq {
		return 0, nil
	}
	return pos, nil
}

func (ix *Indexer) follow(ctx context.Context, p stream.Partition, it jetstream.MessagesContext, filter stream.TypeFilter) {
	defer ix.wg.Done()
	defer it.Stop()
	cfg := ix.x.cfg
	var (
		batch   = ix.x.idx.NewBatch()
		last    uint64
		pending bool
		stamps  []time.Time
		usage   = usageStage{}
		// A steady stream of appends is taken in by batches at most
		// every gap, twice the last batch's write (at most 10 ms), so
		// that writing takes at most half the indexer's time (a batch
		// per entry costs more than the entry: at 1,000 appends a
		// second the index fell behind by a second); wait is how long
		// the next read waits before writing what is pending.
		gap       time.Duration
		lastFlush time.Time
		wait      = cfg.FlushEvery
		// staged bounds the text of a batch (Config.BatchBytes).
		staged    int
		maxStaged = cfg.BatchBytes
	)
	if maxStaged <= 0 {
		maxStaged = DefaultBatchBytes
	}
	flush := func() {
		if !pending {
			return
		}
		v := binary.BigEndian.AppendUint64(nil, last)
		batch.SetInternal(posKey(p), v)
		batch.SetInternal(sliceKey, binary.BigEndian.AppendUint64(nil, ix.x.taken.Load()))
		began := time.Now()
		err := writeUsage(batch, usage)
		if err == nil {
			err = ix.x.read(func() error { return ix.x.idx.Batch(batch) })
		}
		gap = min(2*time.Since(began), 10*time.Millisecond)
		if err == nil {
			ix.x.commitUsage(usage)
		}
		now := time.Now()
		ix.mu.Lock()
		if err != nil {
			ix.lastErr = fmt.Errorf("search: index partition %d: %w", p.Index(), err)
		} else {
			ix.pos[p.Index()] = last
			ix.indexed += uint64(len(stamps))
			for _, at := range stamps {
				ix.addLag(now.Sub(at))
			}
		}
		ix.mu.Unlock()
		batch.Reset()
		pending, stamps, usage, staged = false, stamps[:0], usageStage{}, 0
		lastFlush, wait = now, cfg.FlushEvery
	}
	for {
		if ctx.Err() != nil {
			flush()
			return
		}
		msg, err := it.Next(jetstream.NextMaxWait(wait))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) {
				flush()
				continue
			}
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				flush()
				return
			}
			ix.note(err)
			continue
		}
		meta, err := msg.Metadata()
		if err != nil {
			ix.note(err)
			continue
		}
		last, pending = meta.Sequence.Stream, true
		if !filter.Keep(msg.Subject(), msg.Data()) {
			continue
		}
		m, err := ix.b.Decode(msg.Subject(), msg.Data(), meta.Sequence.Stream)
		switch {
		case err == nil && m.Header != nil:
			ix.learn(m.Session, FactsOf(*m.Header))
			ix.x.reviveUsage(m.Session)
		case err == nil && m.Entry != nil && m.Entry.Type == session.TypeLabel:
			err = ix.x.addLabel(batch, m.Session, m.Entry, meta.Sequence.Stream)
		case err == nil && m.Entry != nil:
			facts := ix.factsOf(ctx, m.Session)
			ix.x.stageUsage(usage, m.Session, m.Entry, facts)
			err = ix.x.add(batch, m.Session, m.Entry, facts)
			stamps = append(stamps, meta.Timestamp)
			staged += min(len(msg.Data()), cfg.MaxTextBytes)
		}
		if err != nil && !errors.Is(err, stream.ErrNotSession) {
			ix.note(err) // left out; the rest goes on
		}
		switch since := time.Since(lastFlush); {
		case batch.Size() >= cfg.Batch, staged >= maxStaged:
			flush()
		case meta.NumPending == 0 && since >= gap:
			flush()
		case meta.NumPending == 0:
			wait = gap - since // caught up: written once the gap has passed
		}
	}
}

// learn remembers a session's header facets.
func (ix *Indexer) learn(id string, f SessionFacts) {
	ix.factsMu.Lock()
	defer ix.factsMu.Unlock()
	ix.facts.Put(id, f)
	if ix.facts.Len() > maxFacts {
		ix.facts.Trim(maxFacts*7/8, nil) // in bulk: a trim sorts what it holds
	}
}

// factsOf are a session's header facets: remembered, or read from its
// header (a session whose header the indexer did not see pass: it
// started after it). A header that cannot be read leaves them empty: the
// entry is indexed without them rather than not at all.
func (ix *Indexer) factsOf(ctx context.Context, id string) SessionFacts {
	ix.factsMu.Lock()
	f, ok := ix.facts.Get(id)
	ix.factsMu.Unlock()
	if ok {
		return f
	}
	h, err := ix.b.Header(ctx, id)
	if err != nil {
		return SessionFacts{}
	}
	f = FactsOf(h)
	ix.learn(id, f)
	return f
}

// forget drops the entries of sessions deleted while it watches.
func (ix *Indexer) forget(ctx context.Context, w jetstream.KeyWatcher) {
	defer ix.wg.Done()
	stream.Deletions(ctx, w, func(id string) {
		if err := ix.x.Forget(ctx, id); err != nil && ctx.Err() == nil {
			ix.note(err)
		}
	})
}

func (ix *Indexer) addLag(d time.Duration) {
	if len(ix.lags) < maxLags {
		ix.lags = append(ix.lags, d)
		return
	}
	ix.lags[ix.lagNext] = d
	ix.lagNext = (ix.lagNext + 1) % maxLags
}

func (ix *Indexer) note(err error) {
	ix.mu.Lock()
	ix.lastErr = err
	ix.mu.Unlock()
}

// Status is what an indexer has done.
type Status struct {
	// Indexed counts the entries taken in since Follow.
	Indexed uint64
	// Positions are the last sequences indexed, per partition.
	Positions map[int]uint64
	// LagP50 and LagP99 are how long after being stored the last (up to
	// 10,000) entries were searchable.
	LagP50, LagP99 time.Duration
	LastError      error
}

// Status reports progress and lag.
func (ix *Indexer) Status() Status {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := Status{Indexed: ix.indexed, Positions: map[int]uint64{}, LastError: ix.lastErr}
	for k, v := range ix.pos {
		st.Positions[k] = v
	}
	if n := len(ix.lags); n > 0 {
		l := slices.Clone(ix.lags)
		slices.Sort(l)
		st.LagP50, st.LagP99 = l[n/2], l[min(n-1, n*99/100)]
	}
	return st
}

// CaughtUp waits until every entry stored before the call is
// searchable: each partition's index holds the last message its filter
// takes that the stream held when the call began (its last messages may
// be of types not indexed). A consumer's own count of what it has left
// is not enough: the server updates it after the append is acknowledged,
// and under load a call read it as nothing left while two entries were
// still to come. That count is a fallback only where the target message
// went away meanwhile (a session deleted): when it has said "nothing
// left, all indexed" for a second on end.
func (ix *Indexer) CaughtUp(ctx context.Context) error {
	t := time.NewTicker(ix.x.cfg.FlushEvery / 2)
	defer t.Stop()
	done := map[int]bool{}
	targets := map[int]uint64{}
	idle := map[int]time.Time{} // since when the consumer has said nothing is left
	for {
		ix.mu.Lock()
		cons, parts := maps.Clone(ix.cons), maps.Clone(ix.parts)
		ix.mu.Unlock()
		for i, c := range cons {
			if done[i] {
				continue
			}
			if _, ok := targets[i]; !ok {
				last, err := lastOf(ctx, parts[i])
				if err != nil {
					continue // a partition electing a leader: ask later
				}
				targets[i] = last
			}
			ix.mu.Lock()
			pos := ix.pos[i]
			ix.mu.Unlock()
			if pos >= targets[i] {
				done[i] = true
				continue
			}
			info, err := c.Info(ctx)
			if err != nil {
				continue // an ordered consumer being made again: ask later
			}
			switch {
			case info.NumPending != 0 || pos < info.Delivered.Stream:
				delete(idle, i)
			case idle[i].IsZero():
				idle[i] = time.Now()
			case time.Since(idle[i]) > time.Second:
				done[i] = true
			}
		}
		if len(done) == len(cons) && !slices.Contains(slices.Collect(maps.Values(done)), false) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// lastOf is the sequence of the last message in f's stream that f's
// subjects take (0 for none).
func lastOf(ctx context.Context, f followed) (uint64, error) {
	var last uint64
	for _, subj := range f.subjects {
		m, err := f.stream.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		last = max(last, m.Sequence)
	}
	return last, nil
}

// Close stops following and waits for the goroutines. It is idempotent;
// the index stays open (its owner closes it).
func (ix *Indexer) Close(ctx context.Context) error {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return nil
	}
	ix.closed = true
	ix.mu.Unlock()
	ix.cancel()
	done := make(chan struct{})
	go func() { ix.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
