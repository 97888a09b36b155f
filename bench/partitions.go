package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/stream"
)

// partitionsPart measures what partitions buy: many writers over many
// sessions, fsync always, on P = 1 and on P = 4, first on one node (the
// fsync-always node), then on a three-node cluster of the same machine
// with replicated streams and the partitions' leaders spread.
func partitionsPart(ctx context.Context, cfg Config, n *node, dir string, r *Report, p progress) error {
	group := fmt.Sprintf("%d writers over %d sessions, fsync always: 4 partitions vs 1", cfg.PartitionWriters, cfg.PartitionSessions)
	p.say("partitions: one node")
	one, four, raw, err := partitionRun(ctx, cfg, n, 1)
	if err != nil {
		return err
	}
	row := Row{Group: group, Name: "throughput, one node", Ours: four, Base: one, Unit: "/s", BaseName: "the same on 1 partition", HigherIsBetter: true, Goal: "≥ 1.50x"}
	row.Met = row.Ratio() >= 1.5
	r.add(row)
	r.add(Row{Group: group, Name: "raw publishes, one node", Ours: raw[1], Base: raw[0], Unit: "/s", BaseName: "raw publishes into 1 stream", HigherIsBetter: true})

	p.say("partitions: three-node cluster")
	cfgs, err := cluster.LocalConfigs(filepath.Join(dir, "cluster"), 3)
	if err != nil {
		return err
	}
	urls := make([]string, len(cfgs))
	for i := range cfgs {
		cfgs[i].SyncAlways = true
		urls[i] = "nats://" + cfgs[i].Listen
	}
	nodes, err := cluster.StartAll(ctx, cfgs)
	if err != nil {
		return err
	}
	defer func() {
		for _, nd := range nodes {
			nd.Close(context.WithoutCancel(ctx))
		}
	}()
	nc, err := cluster.Dial(ctx, strings.Join(urls, ","))
	if err != nil {
		return err
	}
	defer nc.Close()
	one, four, raw, err = partitionRun(ctx, cfg, &node{nc: nc}, 3)
	if err != nil {
		return err
	}
	row = Row{Group: group, Name: "throughput, three-node cluster (R3)", Ours: four, Base: one, Unit: "/s", BaseName: "the same on 1 partition", HigherIsBetter: true, Goal: "≥ 2.00x"}
	row.Met = row.Ratio() >= 2
	r.add(row)
	r.add(Row{Group: group, Name: "raw publishes, three-node cluster (R3)", Ours: raw[1], Base: raw[0], Unit: "/s", BaseName: "raw publishes into 1 stream", HigherIsBetter: true})
	return nil
}

// partitionRun measures the concurrent appends on a deployment of one
// partition and on one of four (leaders spread), each a stream of its own
// on n; raw are the same writers' raw sync publishes to the
// sessions' subjects in each layout (what the server itself gains).
func partitionRun(ctx context.Context, cfg Config, n *node, replicas int) (one, four float64, raw [2]float64, err error) {
	msg, payload := message(cfg.PayloadBytes)
	run := cfg
	run.Writers = cfg.PartitionWriters
	for k, parts := range []int{1, 4} {
		b, err := n.backend(ctx, func(sc *stream.Config) { sc.Partitions, sc.Replicas = parts, replicas })
		if err != nil {
			return 0, 0, raw, err
		}
		if _, err := b.BalanceLeaders(ctx); err != nil {
			b.Close(ctx)
			return 0, 0, raw, err
		}
		if raw[k], err = concurrentRaw(ctx, run, b, payload, cfg.PartitionSessions); err != nil {
			b.Close(ctx)
			return 0, 0, raw, fmt.Errorf("bench: raw, %d partition(s): %w", parts, err)
		}
		tp, err := concurrentOurs(ctx, run, b, msg, cfg.PartitionSessions)
		b.Close(ctx)
		if err != nil {
			return 0, 0, raw, fmt.Errorf("bench: %d partition(s): %w", parts, err)
		}
		if parts == 1 {
			one = tp
		} else {
			four = tp
		}
	}
	return one, four, raw, nil
}
