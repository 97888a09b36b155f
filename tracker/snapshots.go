package tracker

import (
	"context"

	"github.com/agentcore/sessionlog/stream/snapshots"
)

// Snapshots of the trees a replica holds, written when the scheduler says.

// snapshot writes session id's snapshot for the scheduler, and counts it.
func (r *Tracker) snapshot(ctx context.Context, id string) error {
	err := r.writeSnapshot(ctx, id)
	r.bump(func(s *Status) {
		if err != nil {
			s.LastError = err
		} else {
			s.Snapshots++
		}
	})
	return err
}

// writeSnapshot takes the tree's snapshot source under the read lock, and
// encodes and uploads it without.
func (r *Tracker) writeSnapshot(ctx context.Context, id string) error {
	r.mu.RLock()
	h, _ := r.trees.Peek(id)
	if h == nil {
		r.mu.RUnlock()
		return nil // evicted meanwhile
	}
	src, err := snapshots.Capture(h.tree, h.epoch, h.seq)
	r.mu.RUnlock()
	if err != nil {
		return err
	}
	return r.b.SaveSnapshot(ctx, src)
}
