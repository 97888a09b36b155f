package jsx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// bound is a call's whole-request deadline (RequestTimeout) that makes its
// timer only when something waits on it. An append that meets no other
// writer only asks whether its time is up (Err), and each of its attempts
// has a timer of its own anyway (see attempt), so the request's timer was
// made and stopped for nothing on every append.
//
// It behaves as context.WithDeadline(parent, deadline): Err reports the
// deadline once it has passed, and the first Done makes the real timer
// context, whose channel, value lookups and cancellation every later call
// uses.
type bound struct {
	parent   context.Context
	deadline time.Time
	mu       sync.Mutex // held while made is being set
	made     atomic.Pointer[timed]
}

type timed struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// boundKey finds a bound among a context's values (under spans, say).
type boundKey struct{}

// WithBound is context.WithTimeout(ctx, timeout) with a lazily made
// timer: ctx itself when it has a deadline already.
func WithBound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	l := &bound{parent: ctx, deadline: time.Now().Add(timeout)}
	return l, l.stop
}

func (l *bound) timer() *timed {
	if t := l.made.Load(); t != nil {
		return t
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.made.Load(); t != nil {
		return t
	}
	t := &timed{}
	t.ctx, t.cancel = context.WithDeadline(l.parent, l.deadline)
	l.made.Store(t)
	return t
}

func (l *bound) stop() {
	if t := l.made.Load(); t != nil {
		t.cancel()
	}
}

func (l *bound) Deadline() (time.Time, bool) { return l.deadline, true }

func (l *bound) Done() <-chan struct{} { return l.timer().ctx.Done() }

func (l *bound) Err() error {
	if t := l.made.Load(); t != nil {
		return t.ctx.Err()
	}
	if err := l.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(l.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (l *bound) Value(key any) any {
	if _, ok := key.(boundKey); ok {
		return l
	}
	if t := l.made.Load(); t != nil {
		return t.ctx.Value(key)
	}
	return l.parent.Value(key)
}

// AttemptContext is ctx bounded by AttemptTimeout as well. Under a bound
// nobody has waited on yet, the attempt's context is made from the bound's
// parent, with the earlier of the two deadlines: one timer, not two. Its
// values are then the parent's: an attempt's request reads none of its
// own (spans are taken from the call's context).
func AttemptContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if l, ok := ctx.Value(boundKey{}).(*bound); ok && l.made.Load() == nil {
		// A deadline already past gives a context ended at once, as a
		// child of the bound would be.
		d := time.Now().Add(timeout)
		if l.deadline.Before(d) {
			d = l.deadline
		}
		return context.WithDeadline(l.parent, d)
	}
	return context.WithTimeout(ctx, timeout)
}

// WithTimeout is ctx bounded by timeout, unless it has a deadline of its
// own already: a call's own deadline wins over the default.
func WithTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}
