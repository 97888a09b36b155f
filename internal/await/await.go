// Package await is the module's one way to wait for a condition that
// another goroutine or process brings about: a replica applying a
// sequence, the stream reaching one, a store catching up.
package await

import (
	"context"
	"time"
)

// Poll is how often a condition is checked while nothing wakes the wait:
// First after the first check, doubling up to Most.
type Poll struct {
	First, Most time.Duration
}

// Until calls check until it reports done or fails. Between calls it
// waits for the channel wake returns (when wake is not nil: the channel
// the last check saw, closed or sent on when something changed) or for the
// poll interval. It returns check's error, or ctx's when ctx ends first.
func Until(ctx context.Context, p Poll, wake func() <-chan struct{}, check func() (done bool, err error)) error {
	interval := p.First
	for {
		done, err := check()
		if done || err != nil {
			return err
		}
		var woke <-chan struct{}
		if wake != nil {
			woke = wake()
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-woke:
			t.Stop()
		case <-t.C:
			interval = min(2*interval, p.Most)
		}
	}
}
