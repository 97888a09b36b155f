// Package parallel is the module's one way to spread independent CPU work
// over the cores: decoding the lines of a session file, for one. The pure
// packages (session, codec) take such work as a function and start no
// goroutines themselves; their callers pass Ranges.
package parallel

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Ranges returns a function that runs part over [0, n) cut into ranges,
// on up to GOMAXPROCS goroutines (one per started minPer items; the
// caller's is one of them), and returns when all are done. The ranges are
// several per goroutine, taken in turn by whichever is free: items cost
// unequally (a session file's lines run from bytes to megabytes), and
// halves of equal count finish far apart. Parts must touch disjoint state.
// Below minPer items it runs part(0, n) on the caller's goroutine: a
// goroutine would cost more than it saves.
func Ranges(minPer int) func(n int, part func(lo, hi int)) {
	minPer = max(minPer, 1)
	return func(n int, part func(lo, hi int)) {
		workers := min(runtime.GOMAXPROCS(0), n/minPer+1)
		if workers <= 1 {
			part(0, n)
			return
		}
		chunk := max(1, min(minPer, n/(workers*rangesPerWorker)))
		var next atomic.Int64
		work := func() {
			for {
				hi := int(next.Add(int64(chunk)))
				lo := hi - chunk
				if lo >= n {
					return
				}
				part(lo, min(hi, n))
			}
		}
		var wg sync.WaitGroup
		for range workers - 1 {
			wg.Go(work)
		}
		work()
		wg.Wait()
	}
}

// rangesPerWorker is how many ranges each goroutine has to take, at
// least, when there are enough items: enough for the last ones to end
// together, few enough that taking one costs nothing.
const rangesPerWorker = 16

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
