package stream

import (
	"context"

	"github.com/agentcore/sessionlog/stream/snapshots"
)

// The stream's side of snapshots (see package snapshots): each partition
// keeps its sessions' snapshots in a snapshots.Store of its own.

// SaveSnapshot encodes and uploads the snapshot src holds and makes it
// the session's current one, unless a newer one is current already (see
// snapshots.Store.Save).
func (b *Backend) SaveSnapshot(ctx context.Context, src *snapshots.Source) error {
	return b.partOf(src.ID()).snaps.Save(ctx, src)
}

// SnapshotPolicy returns the snapshot policy of the config.
func (c Config) SnapshotPolicy() snapshots.Policy {
	return snapshots.Policy{Every: c.SnapshotEvery, OnCompaction: c.SnapshotOnCompaction}
}

// NewSnapshotScheduler returns a scheduler that calls write (bounded by
// the request timeout) for each session due by the config's policy.
// Close it.
func (b *Backend) NewSnapshotScheduler(write func(ctx context.Context, id string) error) *snapshots.Scheduler {
	return snapshots.NewScheduler(b.cfg.SnapshotPolicy(), b.cfg.RequestTimeout, write)
}

// forgetSnapshot makes the backend forget the last snapshot of session
// id: its next is written whole.
func (b *Backend) forgetSnapshot(id string) { b.partOf(id).snaps.Forget(id) }
