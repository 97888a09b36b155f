// Package parallel is the module's one way to spread independent CPU work
// over the cores: decoding the lines of a session file, for one. The pure
// packages (session, codec) take such work as a function and start no
// goroutines themselves; their callers pass Ranges.
package parallel

import (
	"errors"
	"runtime"
	"sync"
)

// Ranges returns a function that runs part over [0, n) cut into one range
// per started minPer items (n/minPer + 1, at most GOMAXPROCS), every range
// but the first in a goroutine of its own, and returns when all are done.
// Parts must touch disjoint state. Below minPer items it runs part(0, n)
// on the caller's goroutine: a goroutine would cost more than it saves.
func Ranges(minPer int) func(n int, part func(lo, hi int)) {
	minPer = max(minPer, 1)
	return func(n int, part func(lo, hi int)) {
		workers := min(runtime.GOMAXPROCS(0), n/minPer+1)
		if workers <= 1 {
			part(0, n)
			return
		}
		chunk := (n + workers - 1) / workers
		var wg sync.WaitGroup
		for lo := chunk; lo < n; lo += chunk {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				part(lo, hi)
			}(lo, min(lo+chunk, n))
		}
		part(0, min(chunk, n))
		wg.Wait()
	}
}

// Lines spreads the decoding of a session file's lines (codec.WithRunner):
// a hundred lines are a few hundred microseconds of work, far above what
// a goroutine costs (a thousand-line file was decoded on one core).
var Lines = Ranges(128)

// Each runs fn(i) for i in [0, n), each in a goroutine of its own (n of
// 1: in the caller's), waits for all, and joins their errors.
func Each(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
