package parallel_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentcore/sessionlog/internal/parallel"
)

// Every index is visited exactly once, whatever n and the bound, and
// small inputs stay on the caller's goroutine.
func TestRangesCoverEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, minPer int }{
		{0, 1024}, {1, 1024}, {1023, 1024}, {2048, 1024}, {10_000, 1024}, {10_001, 1}, {7, 0},
	} {
		seen := make([]atomic.Int32, tc.n)
		var calls atomic.Int32
		parallel.Ranges(tc.minPer)(tc.n, func(lo, hi int) {
			calls.Add(1)
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
		if want := int32(min(runtime.GOMAXPROCS(0), tc.n/max(tc.minPer, 1)+1)); calls.Load() > want {
			t.Fatalf("n=%d: %d ranges, want at most %d", tc.n, calls.Load(), want)
		}
		if tc.n < max(tc.minPer, 1) && calls.Load() > 1 {
			t.Fatalf("n=%d minPer=%d: split into %d ranges", tc.n, tc.minPer, calls.Load())
		}
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
