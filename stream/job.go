package stream

import (
	"context"
	"sync"
	"time"
)

// job runs fn in a goroutine of its own each time it is triggered —
// triggers that arrive while it runs coalesce into one more run — and at
// most once per interval. The goroutine starts on the first trigger; close
// lets a run in progress finish and waits for it.
type job struct {
	fn       func(ctx context.Context) error
	interval time.Duration
	timeout  time.Duration

	mu      sync.Mutex
	started bool
	closed  bool
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	runs    int
	lastErr error
}

func newJob(interval, timeout time.Duration, fn func(ctx context.Context) error) *job {
	return &job{fn: fn, interval: interval, timeout: timeout, kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (j *job) trigger() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	if !j.started {
		j.started = true
		j.wg.Add(1)
		go j.loop()
	}
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

func (j *job) loop() {
	defer j.wg.Done()
	for {
		select {
		case <-j.stop:
			return
		case <-j.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		err := j.fn(ctx)
		cancel()
		j.mu.Lock()
		j.runs++
		j.lastErr = err
		j.mu.Unlock()
		select {
		case <-j.stop:
			return
		case <-time.After(j.interval):
		}
	}
}

// status returns how many runs finished and the last one's error.
func (j *job) status() (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.runs, j.lastErr
}

// close stops the goroutine after any run in progress. Idempotent.
func (j *job) close() {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return
	}
	j.closed = true
	close(j.stop)
	j.mu.Unlock()
	j.wg.Wait()
}
