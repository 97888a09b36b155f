package stream

import (
	"context"

	"github.com/agentcore/sessionlog/stream/internal/jsx"
	"github.com/agentcore/sessionlog/stream/upkeep"
)

// The stream's side of upkeep (see package upkeep): health, leader
// balancing and replica repair, over the backend's partitions.

// WithReplicaRepair makes the backend watch the replicas of every stream
// of the deployment (sessions, index, snapshots, blobs) and repair those
// that stopped coming back by themselves (see upkeep.RepairConfig). Every
// node that serves the deployment sets it; each acts on the streams its
// own server leads, so that one repair is made at a time.
func WithReplicaRepair(cfg upkeep.RepairConfig) Option {
	return func(b *Backend) { b.repairCfg = &cfg }
}

// deployment is what upkeep acts on.
func (b *Backend) deployment() upkeep.Deployment {
	d := upkeep.Deployment{NC: b.nc, JS: b.js, AttemptTimeout: b.cfg.AttemptTimeout, RequestTimeout: b.cfg.RequestTimeout, Tel: b.tel}
	for _, p := range b.parts {
		c := p.cfg
		d.Partitions = append(d.Partitions, p.stream)
		d.Streams = append(d.Streams, c.Stream, c.indexStream(), "KV_"+c.SnapshotBucket()+"_HEADS", jsx.ObjStream(c.SnapshotBucket()))
	}
	d.Streams = append(d.Streams, jsx.ObjStream(b.cfg.BlobBucket()))
	return d
}

// Leaders reports which server leads each partition ("" while one is
// elected, and for a stream that is not clustered), and how many each
// server leads.
func (b *Backend) Leaders(ctx context.Context) ([]string, upkeep.LeaderCounts, error) {
	return upkeep.Leaders(ctx, b.deployment())
}

// BalanceLeaders moves partition leaderships until they are spread and
// returns how many it moved (see upkeep.BalanceLeaders).
func (b *Backend) BalanceLeaders(ctx context.Context) (int, error) {
	return upkeep.BalanceLeaders(ctx, b.deployment())
}

// Repairs are the replica repairs this backend made, oldest first (at
// most the last 100).
func (b *Backend) Repairs() []upkeep.Repair {
	if b.repairer == nil {
		return nil
	}
	return b.repairer.Repairs()
}

// Health reads the account's streams and usage (see upkeep.Health).
func (b *Backend) Health(ctx context.Context) (upkeep.Health, error) {
	parts := map[string]int{}
	for _, p := range b.parts {
		parts[p.cfg.Stream] = p.cfg.part
	}
	return upkeep.ReadHealth(ctx, b.js, parts)
}
