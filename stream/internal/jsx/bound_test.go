package jsx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A bound behaves as context.WithDeadline, whether or not anything waited
// on it, and an attempt under it ends by the earlier deadline.
func TestBoundIsADeadline(t *testing.T) {
	const timeout = 30 * time.Millisecond
	t.Run("err without done", func(t *testing.T) {
		ctx, cancel := WithBound(context.Background(), timeout)
		defer cancel()
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > 30*time.Millisecond {
			t.Fatalf("deadline %v %v", dl, ok)
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		sessiontest.CheckFor(t, time.Second, 5*time.Millisecond, func() error {
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("Err is %v past the deadline", ctx.Err())
			}
			return nil
		})
		if ctx.(*bound).made.Load() != nil {
			t.Fatal("asking Err made a timer")
		}
		select {
		case <-ctx.Done(): // made now, and done at once
		case <-time.After(time.Second):
			t.Fatal("Done not closed after the deadline")
		}
	})
	t.Run("done closes at the deadline", func(t *testing.T) {
		ctx, cancel := WithBound(context.Background(), timeout)
		defer cancel()
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("Done not closed")
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatal(ctx.Err())
		}
	})
	t.Run("parent's cancellation and values", func(t *testing.T) {
		type key struct{}
		parent, stop := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		ctx, cancel := WithBound(parent, timeout)
		defer cancel()
		if ctx.Value(key{}) != "v" {
			t.Fatal("value lost")
		}
		child, childCancel := context.WithCancel(ctx) // makes the timer
		defer childCancel()
		if ctx.Value(key{}) != "v" {
			t.Fatal("value lost once made")
		}
		stop()
		<-child.Done()
		if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
			t.Fatal(ctx.Err(), child.Err())
		}
	})
	t.Run("cancel stops it", func(t *testing.T) {
		ctx, cancel := WithBound(context.Background(), timeout)
		done := ctx.Done()
		cancel()
		<-done
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatal(ctx.Err())
		}
	})
	t.Run("a caller's deadline is kept", func(t *testing.T) {
		parent, stop := context.WithTimeout(context.Background(), time.Hour)
		defer stop()
		ctx, cancel := WithBound(parent, timeout)
		defer cancel()
		if ctx != parent {
			t.Fatal("a context with a deadline was bounded again")
		}
	})
	t.Run("attempt under a bound", func(t *testing.T) {
		ctx, cancel := WithBound(context.Background(), timeout)
		defer cancel()
		actx, acancel := AttemptContext(ctx, time.Hour)
		defer acancel()
		dl, _ := actx.Deadline()
		if want, _ := ctx.Deadline(); !dl.Equal(want) {
			t.Fatalf("attempt deadline %v, want the bound's %v", dl, want)
		}
		if ctx.(*bound).made.Load() != nil {
			t.Fatal("the attempt made the bound's timer")
		}
		<-actx.Done()
		if !errors.Is(actx.Err(), context.DeadlineExceeded) {
			t.Fatal(actx.Err())
		}
		late, lcancel := AttemptContext(ctx, time.Hour) // the bound is over
		defer lcancel()
		if !errors.Is(late.Err(), context.DeadlineExceeded) {
			t.Fatal(late.Err())
		}
		short, scancel := AttemptContext(ctx, time.Millisecond)
		defer scancel()
		if dl, _ := short.Deadline(); !dl.Before(time.Now().Add(time.Second)) {
			t.Fatal(dl)
		}
	})
}
