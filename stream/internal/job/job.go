// Package job is the one scheduler of the stream packages' background
// writes: index records and snapshots, for one session or many, and the
// leader balancer's rounds.
package job

import (
	"context"
	"sync"
	"time"
)

// Job runs fn for the keys triggered, in a goroutine of its own: one key
// at a time, triggers of a key that arrive before its run coalesce into
// that run, and a round of runs starts at most once per interval. The
// goroutine starts on the first Trigger; Close lets a run in progress
// finish and waits for it. It is the one scheduler of background writes:
// index records and snapshots, for one session or many.
type Job struct {
	fn       func(ctx context.Context, key string) error
	interval time.Duration
	timeout  time.Duration
	// Retry runs a key whose run failed again in the next round.
	Retry bool

	mu      sync.Mutex
	started bool
	closed  bool
	pending map[string]struct{}
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	runs    int
	lastErr error
}

func New(interval, timeout time.Duration, fn func(ctx context.Context, key string) error) *Job {
	return &Job{fn: fn, interval: interval, timeout: timeout, pending: map[string]struct{}{},
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (j *Job) Trigger(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	j.pending[key] = struct{}{}
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

// Forget drops a pending run of key.
func (j *Job) Forget(key string) {
	j.mu.Lock()
	delete(j.pending, key)
	j.mu.Unlock()
}

func (j *Job) loop() {
	defer j.wg.Done()
	for {
		select {
		case <-j.stop:
			return
		case <-j.kick:
		}
		var failed []string
		for {
			key, ok := j.next()
			if !ok {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
			err := j.fn(ctx, key)
			cancel()
			j.mu.Lock()
			j.runs++
			j.lastErr = err
			j.mu.Unlock()
			if err != nil && j.Retry {
				failed = append(failed, key)
			}
			select {
			case <-j.stop:
				return
			default:
			}
		}
		if len(failed) > 0 {
			for _, key := range failed {
				j.Trigger(key) // for the next round, an interval on
			}
		}
		select {
		case <-j.stop:
			return
		case <-time.After(j.interval):
		}
	}
}

// next takes a pending key.
func (j *Job) next() (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for k := range j.pending {
		delete(j.pending, k)
		return k, true
	}
	return "", false
}

// Status returns how many runs finished and the last one's error.
func (j *Job) Status() (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.runs, j.lastErr
}

// Close stops the goroutine after any run in progress. Idempotent.
func (j *Job) Close() {
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
