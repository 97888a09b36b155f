package stream

import (
	"sync"
	"time"
)

// sendCosts is what a send of one entry and an atomic batch have cost on
// this backend, as moving averages of the sends seen: what decides when
// entries waiting to be sent (a Pipeline's, writers' sharing a session)
// are worth an atomic batch.
//
// An atomic batch of two or more messages costs the server some 2.5–4
// ms whatever its size and sync policy (it stages the batch, on a
// single-node file stream in a file store of its own: 2.5–3.5 ms measured
// on nats-server 2.12, 3.2–4.2 ms on 2.15), where one message costs a
// round trip (0.1–0.5 ms, with fsync always). So waiting entries go as a batch only when they
// are enough to pay for it — as many as a batch costs single sends — and
// otherwise one send at a time.
type sendCosts struct {
	mu            sync.Mutex
	single, batch time.Duration // 0: not yet seen
}

// firstBatch is how many entries must wait before the first atomic batch
// is tried, while its cost is unknown.
const firstBatch = 8

// size is how many of queued waiting entries to send now: all (up to
// MaxBatch) when they cost more sent one by one than as a batch, else one.
func (c *sendCosts) size(queued int) int {
	if queued < 2 {
		return queued
	}
	c.mu.Lock()
	single, batch := c.single, c.batch
	c.mu.Unlock()
	if batch == 0 && queued >= firstBatch || batch > 0 && time.Duration(queued)*single >= batch {
		return min(queued, MaxBatch)
	}
	return 1
}

// learn folds a send of n entries that took d into the costs.
func (c *sendCosts) learn(n int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	avg := &c.single
	if n > 1 {
		avg = &c.batch
	}
	if *avg == 0 {
		*avg = d
	} else {
		*avg += (d - *avg) / 4
	}
}
