package parallel_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Every index is visited exactly once, whatever n and the bound, by no
// more goroutines at once than the bound allows; small inputs stay on the
// caller's goroutine; unequal items are shared out as they finish.
func TestRangesCoverEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, minPer int }{
		{0, 1024}, {1, 1024}, {1023, 1024}, {2048, 1024}, {10_000, 1024}, {10_001, 1}, {7, 0},
	} {
		seen := make([]atomic.Int32, tc.n)
		var calls, active, most atomic.Int32
		parallel.Ranges(tc.minPer)(tc.n, func(lo, hi int) {
			calls.Add(1)
			a := active.Add(1)
			defer active.Add(-1)
			for m := most.Load(); a > m && !most.CompareAndSwap(m, a); m = most.Load() {
			}
			if lo < 0 || hi > tc.n || lo > hi {
				t.Errorf("n=%d: range [%d, %d)", tc.n, lo, hi)
				return
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d minPer=%d: index %d visited %d times", tc.n, tc.minPer, i, c)
			}
		}
		if want := int32(min(runtime.GOMAXPROCS(0), tc.n/max(tc.minPer, 1)+1)); most.Load() > want {
			t.Fatalf("n=%d: %d ranges at once, want at most %d", tc.n, most.Load(), want)
		}
		if tc.n < max(tc.minPer, 1) && calls.Load() > 1 {
			t.Fatalf("n=%d minPer=%d: split into %d ranges", tc.n, tc.minPer, calls.Load())
		}
	}
}

// One costly item does not hold back the items after it: while it runs,
// another goroutine takes the rest.
func TestRangesShareUnequalItems(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two cores")
	}
	const n = 4096
	release := make(chan struct{})
	var done atomic.Int32
	finished := make(chan struct{})
	go func() {
		parallel.Ranges(16)(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if i == 0 {
					<-release // the costly item: held until the rest are done
				}
				done.Add(1)
			}
		})
		close(finished)
	}()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	sessiontest.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if d := done.Load(); d < n-16 {
			return fmt.Errorf("%d of the %d items after the costly one done while it runs", d, n-16)
		}
		return nil
	})
	free()
	<-finished
	if done.Load() != n {
		t.Fatalf("%d of %d items done", done.Load(), n)
	}
}

// Each runs every index once and reports every error.
func TestEachRunsEveryIndexAndJoinsErrors(t *testing.T) {
	for _, n := range []int{1, 2, 7} {
		var ran [7]atomic.Int32
		err := parallel.Each(n, func(i int) error {
			ran[i].Add(1)
			if i%2 == 0 {
				return fmt.Errorf("index %d", i)
			}
			return nil
		})
		for i := range n {
			if got := ran[i].Load(); got != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, got)
			}
			if want := fmt.Sprintf("index %d", i); (i%2 == 0) != strings.Contains(fmt.Sprint(err), want) {
				t.Fatalf("n=%d: error %v, index %d", n, err, i)
			}
		}
	}
}
