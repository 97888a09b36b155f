package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/stream"
)

// cache keeps recently used sessions open between requests, so a request
// costs a freshness check (Store.CatchUp: one round trip) rather than a load.
// Stores are reference counted: one evicted or dropped while a request
// uses it is closed when that request releases it.
type cache struct {
	b   *stream.Backend
	max int
	// maxBytes bounds the memory of the idle stores held (Store.Bytes, as
	// of each one's last release): past it the least recently used are
	// closed, however few. A store in use stays until released.
	maxBytes int64
	// report hears of a store whose Close failed: its Close writes the
	// session's index record, so a failure leaves a listing stale.
	report func(id string, err error)

	mu     sync.Mutex
	m      *lru.Cache[string, *held]
	bytes  int64 // the held stores' bytes, as last measured
	closed bool
}

type held struct {
	id      string
	st      *stream.Store
	usedAt  time.Time // when last released
	refs    int
	bytes   int64 // Store.Bytes at the last release
	dropped bool
}

func newCache(b *stream.Backend, max int, maxBytes int64, report func(id string, err error)) *cache {
	return &cache{b: b, max: max, maxBytes: maxBytes, report: report, m: lru.New[string, *held]()}
}

// out counts h out of the cache's bytes. Called with mu held, as h leaves.
func (c *cache) out(h *held) {
	c.bytes -= h.bytes
	h.bytes = 0
}

// shut closes stores taken out of the cache — never under its lock: a
// Close writes the index — and reports each that failed.
func (c *cache) shut(ctx context.Context, hs ...*held) error {
	var errs []error
	for _, h := range hs {
		if err := h.st.Close(ctx); err != nil {
			c.report(h.id, err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// freshness is how current a store acquired must be.
type freshness struct {
	never  bool          // as the cache holds it (writes check the stream themselves)
	maxLag time.Duration // missing nothing acknowledged longer ago (0: nothing at all)
}

// acquire returns session id's store, as fresh as asked, and a release to
// call when done. A session deleted and created again since it was opened
// is opened anew.
func (c *cache) acquire(ctx context.Context, id string, fresh freshness) (*stream.Store, func(), error) {
	for attempt := 0; ; attempt++ {
		h, err := c.get(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		release := func() { c.release(ctx, h) }
		if fresh.never {
			return h.st, release, nil
		}
		err = h.st.CatchUpWithin(ctx, fresh.maxLag)
		if err == nil {
			return h.st, release, nil
		}
		c.drop(id, h)
		release()
		// Only a session created again is opened anew; corruption is
		// reported as it is, never retried.
		if !errors.Is(err, stream.ErrRecreated) || attempt > 0 {
			return nil, nil, err
		}
	}
}

func (c *cache) get(ctx context.Context, id string) (*held, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if h, ok := c.m.Get(id); ok {
		h.refs++
		c.mu.Unlock()
		return h, nil
	}
	c.mu.Unlock()
	st, err := c.b.OpenStore(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, ok := c.m.Peek(id); ok || c.closed { // opened meanwhile by another request
		c.mu.Unlock()
		c.shut(ctx, &held{id: id, st: st})
		if !ok {
			return nil, ErrClosed
		}
		return c.get(ctx, id)
	}
	h := &held{id: id, st: st, refs: 1}
	c.m.Put(id, h)
	victims := c.evict()
	c.mu.Unlock()
	c.shut(ctx, victims...)
	return h, nil
}

// size is the number of sessions held.
func (c *cache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Len()
}

// evict takes idle stores out past the bounds, least recently used
// first. Called with mu held; the caller closes what it returns.
func (c *cache) evict() []*held {
	idle := func(_ string, h *held) bool { return h.refs == 0 }
	victims := c.m.Trim(c.max, idle)
	for _, h := range victims {
		c.out(h)
	}
	c.m.TrimWhile(func() bool { return c.bytes > c.maxBytes }, idle, func(_ string, h *held) {
		c.out(h)
		victims = append(victims, h)
	})
	return victims
}

func (c *cache) release(ctx context.Context, h *held) {
	size := h.st.Bytes() // outside the lock: it takes the tree's
	c.mu.Lock()
	h.refs--
	h.usedAt = time.Now()
	if !h.dropped {
		c.bytes += size - h.bytes
		h.bytes = size
		// A session holding more than the whole bound is opened again for
		// the next request, from its latest snapshot, with only the
		// entries since loaded; this store goes with its last release.
		if size > c.maxBytes {
			if cur, ok := c.m.Peek(h.id); ok && cur == h {
				c.m.Remove(h.id)
			}
			c.out(h)
			h.dropped = true
		}
	}
	closeIt := h.refs == 0 && h.dropped
	var victims []*held
	if !closeIt {
		victims = c.evict()
	}
	c.mu.Unlock()
	if closeIt {
		victims = append(victims, h)
	}
	c.shut(context.WithoutCancel(ctx), victims...)
}

// expire closes the stores nobody used for idle: a session read once is
// not held (with all its entries) until others push it out.
func (c *cache) expire(ctx context.Context, idle time.Duration) {
	cut := time.Now().Add(-idle)
	var victims []*held
	c.mu.Lock()
	for id, h := range c.m.All() {
		if h.refs == 0 && h.usedAt.Before(cut) {
			victims = append(victims, h)
			c.m.Remove(id)
			c.out(h)
		}
	}
	c.mu.Unlock()
	c.shut(ctx, victims...)
}

// drop forgets id's store (h, or whatever is held when h is nil). A store
// in use is closed by its last release; one that is not is returned for
// the caller to close.
func (c *cache) drop(id string, h *held) *stream.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.m.Peek(id)
	if !ok || (h != nil && cur != h) {
		return nil
	}
	c.m.Remove(id)
	c.out(cur)
	cur.dropped = true
	if cur.refs == 0 {
		return cur.st
	}
	return nil
}

// close closes every store; requests still holding one close it on release.
func (c *cache) close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	var idle []*held
	for id, h := range c.m.All() {
		c.m.Remove(id)
		c.out(h)
		h.dropped = true
		if h.refs == 0 {
			idle = append(idle, h)
		}
	}
	c.mu.Unlock()
	return c.shut(ctx, idle...)
}
