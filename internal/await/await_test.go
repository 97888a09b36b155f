package await_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/internal/await"
)

func TestUntil(t *testing.T) {
	slow := await.Poll{First: time.Hour, Most: time.Hour}
	t.Run("done at once", func(t *testing.T) {
		if err := await.Until(context.Background(), slow, nil, func() (bool, error) { return true, nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("check's error", func(t *testing.T) {
		boom := errors.New("boom")
		if err := await.Until(context.Background(), slow, nil, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("woken, not polled", func(t *testing.T) {
		wake := make(chan struct{}, 1)
		var calls atomic.Int32
		go func() { wake <- struct{}{} }()
		err := await.Until(context.Background(), slow, func() <-chan struct{} { return wake }, func() (bool, error) {
			return calls.Add(1) == 2, nil
		})
		if err != nil || calls.Load() != 2 {
			t.Fatalf("%d calls: %v", calls.Load(), err)
		}
	})
	t.Run("polled without a wake", func(t *testing.T) {
		var calls int
		err := await.Until(context.Background(), await.Poll{First: time.Millisecond, Most: 2 * time.Millisecond}, nil, func() (bool, error) {
			calls++
			return calls == 4, nil
		})
		if err != nil || calls != 4 {
			t.Fatalf("%d calls: %v", calls, err)
		}
	})
	t.Run("ctx ends it", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := await.Until(ctx, slow, nil, func() (bool, error) { return false, nil })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}
