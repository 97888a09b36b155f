package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

var (
	// ErrClosed is returned by a Replica used after Close.
	ErrClosed = errors.New("replica: closed")
	// ErrNotFollowed is returned by WaitFor for a sequence that belongs to
	// no session this replica follows.
	ErrNotFollowed = errors.New("replica: sequence not in a followed session")
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("replica: invalid config")
)

// Config configures a replica.
type Config struct {
	// Session is the one session to follow; "" follows every session,
	// loading each on first use.
	Session string
	// MaxSessions bounds the trees kept in memory; the least recently used
	// are evicted and rebuilt (snapshot + tail) when next read.
	MaxSessions int
	// WriteSnapshots makes the replica write snapshots of the sessions it
	// holds, per the backend's snapshot policy.
	WriteSnapshots bool
	// RetryInterval is the pause before re-creating a lost consumer.
	RetryInterval time.Duration
}

// DefaultConfig follows every session, keeping up to 1024 trees.
func DefaultConfig() Config {
	return Config{MaxSessions: 1024, WriteSnapshots: true, RetryInterval: 250 * time.Millisecond}
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Session != "" {
		if err := session.ValidateSessionID(c.Session); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	switch {
	case c.MaxSessions < 1:
		return fmt.Errorf("%w: MaxSessions must be at least 1", ErrInvalidConfig)
	case c.RetryInterval <= 0:
		return fmt.Errorf("%w: RetryInterval must be positive", ErrInvalidConfig)
	}
	return nil
}

// Status is a replica's health.
type Status struct {
	// Applied is the stream sequence of the last message processed.
	Applied uint64
	// Lag is how many messages of the followed subjects were still
	// pending in the stream when the last one was delivered.
	Lag uint64
	// Sessions is the number of trees held.
	Sessions int
	// Loads counts trees built (from snapshot + tail or from the stream);
	// LastLoad is how long the last one took.
	Loads    int
	LastLoad time.Duration
	// FromSnapshot counts loads that used a snapshot.
	FromSnapshot int
	// Resets counts trees dropped because the stream said something the
	// tree could not take (a re-created session, an entry that does not
	// fit); they are rebuilt on next read.
	Resets int
	// Evictions counts trees dropped to stay within MaxSessions.
	Evictions int
	// Snapshots counts snapshots written.
	Snapshots int
	// Consumers counts consumers created (more than one: the replica
	// resumed after losing one).
	Consumers int
	// LastError is the last error met while tailing or writing snapshots.
	LastError error
}

// Replica follows one session or all of them. Its goroutine owns the
// trees; readers see them under a read lock.
type Replica struct {
	b   *stream.Backend
	cfg Config

	mu      sync.RWMutex
	trees   *lru.Cache[string, *held]
	applied uint64
	notify  chan struct{} // closed and replaced on every advance
	status  Status
	closed  bool

	in     chan jetstream.Msg
	loads  chan loadReq
	snaps  *stream.SnapshotScheduler // nil unless WriteSnapshots
	cancel context.CancelFunc
	wg     sync.WaitGroup
	gauges metric.Registration // lag, applied sequence and trees, observed
}

type held struct {
	tree      *session.Tree
	epoch     uint64
	seq       uint64 // last sequence applied to this tree
}

type loadReq struct {
	id    string
	reply chan error
}

// Start builds the replica and starts tailing. A single-session replica
// has its session loaded when Start returns.
func Start(ctx context.Context, b *stream.Backend, cfg Config) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Replica{
		b: b, cfg: cfg,
		trees:  lru.New[string, *held](),
		notify: make(chan struct{}),
		in:     make(chan jetstream.Msg, 256),
		loads:  make(chan loadReq),
	}
	var from uint64
	if cfg.Session != "" {
		if err := r.load(ctx, cfg.Session); err != nil {
			return nil, err
		}
		h, _ := r.trees.Get(cfg.Session)
		from = h.seq + 1
		r.applied = from - 1
	} else {
		info, err := b.Stream().Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("replica: %w", err)
		}
		// Sessions are loaded whole on first read; the tail starts here.
		from = info.State.LastSeq + 1
		r.applied = info.State.LastSeq
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	index, err := b.WatchIndex(rctx)
	if err != nil {
		cancel()
		return nil, err
	}
	tel := b.Telemetry()
	follows := attribute.String("sessionlog.follows", cmp.Or(cfg.Session, "*"))
	r.gauges, err = tel.Meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := r.Status()
		o.ObserveInt64(tel.ReplicaLag, int64(st.Lag), metric.WithAttributes(follows))
		o.ObserveInt64(tel.ReplicaApplied, int64(st.Applied), metric.WithAttributes(follows))
		o.ObserveInt64(tel.CacheSize, int64(st.Sessions), metric.WithAttributes(follows, telemetry.CacheKey.String("replica")))
		return nil
	}, tel.ReplicaLag, tel.ReplicaApplied, tel.CacheSize)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("replica: metrics: %w", err)
	}
	r.wg.Add(2)
	go r.feed(rctx, from)
	go r.own(rctx, index)
	if cfg.WriteSnapshots {
		r.snaps = b.NewSnapshotScheduler(r.snapshot)
	}
	return r, nil
}

// Close stops the replica and waits for its goroutines. Idempotent.
func (r *Replica) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	_ = r.gauges.Unregister() // only fails for a foreign registration
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		if r.snaps != nil {
			r.snaps.Close() // a snapshot being written finishes first
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("replica: close: %w", ctx.Err())
	}
}

// feed delivers the followed subjects from sequence `from` on, in order,
// re-creating the consumer after any loss from just past the last message
// it handed on, so that nothing is skipped or repeated.
func (r *Replica) feed(ctx context.Context, from uint64) {
	defer r.wg.Done()
	next := from
	for ctx.Err() == nil {
		cons, err := r.b.Stream().OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{r.b.SessionSubjects(r.cfg.Session)},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    next,
		})
		if err == nil {
			r.bump(func(s *Status) { s.Consumers++ })
			var it jetstream.MessagesContext
			if it, err = cons.Messages(); err == nil {
				err = r.pump(ctx, it, &next)
				it.Stop()
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.bump(func(s *Status) { s.LastError = err })
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.RetryInterval):
		}
	}
}

func (r *Replica) pump(ctx context.Context, it jetstream.MessagesContext, next *uint64) error {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				continue // the ordered consumer resets itself
			}
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		if meta.Sequence.Stream < *next {
			continue // delivered again after a reset
		}
		select {
		case r.in <- msg:
			*next = meta.Sequence.Stream + 1
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// own is the goroutine that changes trees: it applies delivered messages,
// serves loads, and drops the trees of deleted sessions.
func (r *Replica) own(ctx context.Context, index jetstream.KeyWatcher) {
	defer r.wg.Done()
	defer index.Stop()
	updates := index.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-r.in:
			r.apply(msg)
		case req := <-r.loads:
			req.reply <- r.load(ctx, req.id)
		case e, ok := <-updates:
			if !ok {
				updates = nil // the watcher ended: stop listening to it
				continue
			}
			if e == nil || e.Operation() == jetstream.KeyValuePut {
				continue
			}
			r.mu.Lock()
			if r.drop(e.Key()) {
				r.status.Resets++
			}
			r.mu.Unlock()
		}
	}
}

func (r *Replica) apply(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		r.bump(func(s *Status) { s.LastError = err })
		return
	}
	seq := meta.Sequence.Stream
	m, derr := r.b.Decode(msg.Subject(), msg.Data(), seq)
	r.mu.Lock()
	defer func() {
		r.applied = max(r.applied, seq)
		r.status.Lag = meta.NumPending
		close(r.notify)
		r.notify = make(chan struct{})
		r.mu.Unlock()
	}()
	if errors.Is(derr, stream.ErrNotSession) {
		return // a read barrier: no session's
	}
	if derr != nil {
		r.status.LastError = derr
		return
	}
	h, _ := r.trees.Get(m.Session)
	if h == nil || seq <= h.seq {
		return // not held (read whole on first use), or already in
	}
	if m.Header != nil {
		// The session was deleted and created again: start over.
		r.drop(m.Session)
		r.status.Resets++
		return
	}
	if err := h.tree.Apply(m.Entry); err != nil {
		r.drop(m.Session)
		r.status.Resets++
		r.status.LastError = fmt.Errorf("replica: %s seq %d: %w", m.Session, seq, err)
		return
	}
	h.seq = seq
	if r.snaps != nil {
		r.snaps.Applied(m.Session, m.Entry)
	}
}

// drop forgets a session's tree, and its snapshot count. Called with mu
// held.
func (r *Replica) drop(id string) bool {
	_, held := r.trees.Remove(id)
	if r.snaps != nil {
		r.snaps.Forget(id)
	}
	return held
}

// load builds a session's tree (snapshot + tail, or the whole stream) and
// holds it, evicting the least recently used beyond MaxSessions. Only the
// owning goroutine (or Start, before it runs) calls it.
func (r *Replica) load(ctx context.Context, id string) error {
	r.mu.RLock()
	_, ok := r.trees.Get(id)
	r.mu.RUnlock()
	if ok {
		return nil
	}
	l, err := r.b.LoadTree(ctx, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Loads++
	r.status.LastLoad = l.Info.Took
	if l.Info.FromSnapshot {
		r.status.FromSnapshot++
	}
	if err != nil {
		return err
	}
	h := &held{tree: l.Tree, epoch: l.Epoch, seq: l.Seq}
	r.trees.Put(id, h)
	// The followed session is never evicted: the feed keeps it current.
	for _, v := range r.trees.Trim(r.cfg.MaxSessions, func(k string, _ *held) bool { return k != id && k != r.cfg.Session }) {
		if r.snaps != nil {
			r.snaps.Forget(v.tree.Header().ID)
		}
		r.status.Evictions++
	}
	return nil
}

// Read runs fn on the tree of session id, loading it first if needed. fn
// runs under the read lock: it must not keep t or call the replica.
func (r *Replica) Read(ctx context.Context, id string, fn func(t *session.Tree) error) error {
	if r.cfg.Session != "" && id != r.cfg.Session {
		return fmt.Errorf("%w: this replica follows only %s, not %s", ErrNotFollowed, r.cfg.Session, id)
	}
	for range 3 {
		r.mu.RLock()
		if r.closed {
			r.mu.RUnlock()
			return ErrClosed
		}
		if h, ok := r.trees.Get(id); ok {
			err := fn(h.tree)
			r.mu.RUnlock()
			return err
		}
		r.mu.RUnlock()
		reply := make(chan error, 1)
		select {
		case r.loads <- loadReq{id: id, reply: reply}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-reply:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("replica: %s was evicted as soon as it was loaded (MaxSessions %d)", id, r.cfg.MaxSessions)
}

// WaitFor blocks until the replica has applied stream sequence seq — the
// sequence a writer's append returned — or ctx ends.
func (r *Replica) WaitFor(ctx context.Context, seq uint64) error {
	checked := false
	var applied uint64
	var notify chan struct{}
	err := await.Until(ctx, await.Poll{First: 50 * time.Millisecond, Most: time.Second}, func() <-chan struct{} { return notify },
		func() (bool, error) {
			r.mu.RLock()
			var closed bool
			applied, notify, closed = r.applied, r.notify, r.closed
			r.mu.RUnlock()
			switch {
			case closed:
				return false, ErrClosed
			case applied >= seq:
				return true, nil
			}
			if !checked && r.cfg.Session != "" {
				// A single-session replica never sees other sessions' messages.
				checked = true
				m, err := r.b.Stream().GetMsg(ctx, seq)
				if err == nil {
					if dm, derr := r.b.Decode(m.Subject, m.Data, seq); derr != nil || dm.Session != r.cfg.Session {
						return false, fmt.Errorf("%w: %d", ErrNotFollowed, seq)
					}
				}
			}
			return false, nil
		})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("replica: waiting for sequence %d (applied %d): %w", seq, applied, err)
	}
	return err
}

// Status reports the replica's health.
func (r *Replica) Status() Status {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.status
	s.Applied = r.applied
	s.Sessions = r.trees.Len()
	return s
}

func (r *Replica) bump(fn func(*Status)) {
	r.mu.Lock()
	fn(&r.status)
	r.mu.Unlock()
}

// snapshot writes session id's snapshot for the scheduler, and counts it.
func (r *Replica) snapshot(ctx context.Context, id string) error {
	err := r.writeSnapshot(ctx, id)
	r.bump(func(s *Status) {
		if err != nil {
			s.LastError = err
		} else {
			s.Snapshots++
		}
	})
	return err
}

// writeSnapshot encodes under the read lock and uploads without it.
func (r *Replica) writeSnapshot(ctx context.Context, id string) error {
	r.mu.RLock()
	h, _ := r.trees.Peek(id)
	if h == nil {
		r.mu.RUnlock()
		return nil // evicted meanwhile
	}
	snap, err := stream.EncodeSnapshot(h.tree, h.epoch, h.seq)
	r.mu.RUnlock()
	if err != nil {
		return err
	}
	return r.b.SaveSnapshot(ctx, snap)
}
