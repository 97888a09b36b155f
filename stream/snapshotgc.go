package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/stream/snapshots"
)

// CollectOption configures CollectSnapshots.
type CollectOption func(*collectConfig)

type collectConfig struct{ grace time.Duration }

// WithGrace collects objects written more than grace ago instead of the
// blob grace period. A grace shorter than the longest save in flight
// deletes that save's objects: the snapshot is then found unusable and
// the session read from its messages until it is snapshotted again.
func WithGrace(grace time.Duration) CollectOption {
	return func(c *collectConfig) { c.grace = grace }
}

// CollectSnapshots deletes, in every partition, the snapshot objects no
// head names that were written more than the grace period ago (the blob
// grace unless WithGrace says otherwise): those of saves cut short by a
// node stopping, or whose head write was never answered (see
// snapshots.Store.Collect). serve runs it with the blob collection.
func (b *Backend) CollectSnapshots(ctx context.Context, opts ...CollectOption) (snapshots.CollectStats, error) {
	c := collectConfig{grace: b.blobs.Grace()}
	for _, o := range opts {
		o(&c)
	}
	if c.grace <= 0 {
		return snapshots.CollectStats{}, fmt.Errorf("%w: snapshot grace period %v is not positive", ErrInvalidConfig, c.grace)
	}
	var all snapshots.CollectStats
	cutoff := time.Now().Add(-c.grace)
	for _, p := range b.parts {
		st, err := p.snaps.Collect(ctx, cutoff)
		all.Add(st)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}
