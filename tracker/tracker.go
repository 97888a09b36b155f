package tracker

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

	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/snapshots"
	"github.com/agentcore/sessionlog/telemetry"
)

var (
	// ErrClosed is returned by a Tracker used after Close.
	ErrClosed = errors.New("tracker: closed")
	// ErrNotFollowed is returned by WaitFor for a sequence that belongs to
	// no session this replica follows.
	ErrNotFollowed = errors.New("tracker: sequence not in a followed session")
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("tracker: invalid config")
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
	// Applied is the stream sequence of the last message processed (with
	// several partitions, the sum over them: sequences are per partition).
	Applied uint64
	// Lag is how many messages of the followed subjects were still
	// pending when the last one was delivered (summed over partitions).
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

// Tracker follows one session or all of them. Its goroutine owns the
// trees; readers see them under a read lock.
type Tracker struct {
	b   *stream.Backend
	cfg Config

	mu      sync.RWMutex
	trees   *lru.Cache[string, *held]
	parts   []stream.Partition
	applied []uint64      // per partition (of parts)
	lag     []uint64      // per partition
	notify  chan struct{} // closed and replaced on every advance
	status  Status
	closed  bool

	in      chan delivered
	deleted chan string // sessions removed from an index
	loads   chan loadReq
	snaps   *snapshots.Scheduler // nil unless WriteSnapshots
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	gauges  metric.Registration // lag, applied sequence and trees, observed
}

type held struct {
	tree  *session.Tree
	epoch uint64
	seq   uint64 // last sequence applied to this tree
}

// delivered is a message of partition part.
type delivered struct {
	part int
	msg  jetstream.Msg
}

type loadReq struct {
	id    string
	reply chan error
}

// Start builds the replica and starts tailing. A single-session replica
// has its session loaded when Start returns.
func Start(ctx context.Context, b *stream.Backend, cfg Config) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	parts := b.Partitions()
	r := &Tracker{
		b: b, cfg: cfg,
		trees:   lru.New[string, *held](),
		parts:   parts,
		applied: make([]uint64, len(parts)),
		lag:     make([]uint64, len(parts)),
		notify:  make(chan struct{}),
		in:      make(chan delivered, 256),
		deleted: make(chan string, 64),
		loads:   make(chan loadReq),
	}
	// from is where each followed partition's tail starts (0: not
	// followed).
	from := make([]uint64, len(parts))
	if cfg.Session != "" {
		if err := r.load(ctx, cfg.Session); err != nil {
			return nil, err
		}
		h, _ := r.trees.Peek(cfg.Session)
		i := stream.PartitionOf(cfg.Session, len(parts))
		from[i] = h.seq + 1
		r.applied[i] = h.seq
	} else {
		for i, p := range parts {
			info, err := p.Stream().Info(ctx)
			if err != nil {
				return nil, fmt.Errorf("tracker: %w", err)
			}
			// Sessions are loaded whole on first read; the tail starts here.
			from[i] = info.State.LastSeq + 1
			r.applied[i] = info.State.LastSeq
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	var watchers []jetstream.KeyWatcher
	for i, p := range parts {
		if from[i] == 0 {
			continue
		}
		w, err := p.WatchIndex(rctx)
		if err != nil {
			cancel()
			return nil, err
		}
		watchers = append(watchers, w)
	}
	tel := b.Telemetry()
	var err error
	follows := attribute.String("sessionlog.follows", cmp.Or(cfg.Session, "*"))
	r.gauges, err = tel.Meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := r.Status()
		o.ObserveInt64(tel.TrackerLag, int64(st.Lag), metric.WithAttributes(follows))
		o.ObserveInt64(tel.TrackerApplied, int64(st.Applied), metric.WithAttributes(follows))
		o.ObserveInt64(tel.CacheSize, int64(st.Sessions), metric.WithAttributes(follows, telemetry.CacheKey.String("replica")))
		return nil
	}, tel.TrackerLag, tel.TrackerApplied, tel.CacheSize)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("tracker: metrics: %w", err)
	}
	for i, f := range from {
		if f == 0 {
			continue
		}
		r.wg.Add(1)
		go r.feed(rctx, i, f)
	}
	for _, w := range watchers {
		r.wg.Add(1)
		go r.watchDeletes(rctx, w)
	}
	r.wg.Add(1)
	go r.own(rctx)
	if cfg.WriteSnapshots {
		r.snaps = b.NewSnapshotScheduler(r.snapshot)
	}
	return r, nil
}

// Close stops the replica and waits for its goroutines. Idempotent.
func (r *Tracker) Close(ctx context.Context) error {
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
		return fmt.Errorf("tracker: close: %w", ctx.Err())
	}
}

// Status reports the replica's health.
func (r *Tracker) Status() Status {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.status
	for i := range r.applied {
		s.Applied += r.applied[i]
		s.Lag += r.lag[i]
	}
	s.Sessions = r.trees.Len()
	return s
}

func (r *Tracker) bump(fn func(*Status)) {
	r.mu.Lock()
	fn(&r.status)
	r.mu.Unlock()
}
