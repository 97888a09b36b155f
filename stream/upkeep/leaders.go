package upkeep

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/stream/internal/job"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// Spreading partition leaders: partitions add write capacity only when
// their leaders are on different servers, and nats-server elects a
// stream's leader among its peers without regard to what else each one
// leads. BalanceLeaders moves leaderships, one stepdown at a time, from
// the server leading the most partitions to a current peer leading the
// fewest, until no server leads more than one partition above another
// that could take it.

// LeaderCounts maps each server holding a partition's replica to the
// number of partitions it leads.
type LeaderCounts map[string]int

// Leaders reports which server leads each partition ("" while one is
// elected, and for a stream that is not clustered), and how many each
// server leads.
func Leaders(ctx context.Context, d Deployment) ([]string, LeaderCounts, error) {
	leaders, _, counts, err := leaderState(ctx, d)
	return leaders, counts, err
}

// leaderState is Leaders with each partition's current followers.
func leaderState(ctx context.Context, d Deployment) ([]string, [][]string, LeaderCounts, error) {
	leaders := make([]string, len(d.Partitions))
	peers := make([][]string, len(d.Partitions)) // current peers that could lead
	err := parallel.Each(len(d.Partitions), func(i int) error {
		// Each ask bounded: a partition electing answers nothing, and
		// counts as led by nobody for now.
		actx, cancel := context.WithTimeout(ctx, d.AttemptTimeout)
		defer cancel()
		p := d.Partitions[i]
		info, err := p.Info(actx)
		if jsx.Ambiguous(err) && ctx.Err() == nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("upkeep: leaders: %s: %w", p.CachedInfo().Config.Name, err)
		}
		if c := info.Cluster; c != nil {
			leaders[i] = c.Leader
			for _, r := range c.Replicas {
				if r.Current && !r.Offline {
					peers[i] = append(peers[i], r.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return leaders, peers, countLeaders(leaders, peers), nil
}

// countLeaders counts the partitions each server leads, with every
// current follower present (at 0 if it leads none).
func countLeaders(leaders []string, peers [][]string) LeaderCounts {
	counts := LeaderCounts{}
	for i, l := range leaders {
		if l != "" {
			counts[l]++
		}
		for _, p := range peers[i] {
			counts[p] += 0
		}
	}
	return counts
}

// BalanceLeaders moves partition leaderships until they are spread (see
// above) and returns how many it moved. Several nodes may run it at once:
// each move is re-decided from a fresh count, so they converge.
func BalanceLeaders(ctx context.Context, d Deployment) (int, error) {
	moved := 0
	for range len(d.Partitions) {
		leaders, peers, counts, err := leaderState(ctx, d)
		if err != nil {
			return moved, err
		}
		part, to := planMove(leaders, counts, peers)
		if part < 0 {
			return moved, nil
		}
		if err := stepDown(ctx, d, d.Partitions[part], leaders[part], to); err != nil {
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// planMove picks the partition to move and its new leader: from the
// server leading the most, to its current follower leading the fewest,
// when that narrows the gap (a difference of one is as even as it gets).
// Ties go by name, so that concurrent planners agree. -1: nothing to do.
func planMove(leaders []string, counts LeaderCounts, peers [][]string) (int, string) {
	servers := make([]string, 0, len(counts))
	for s := range counts {
		servers = append(servers, s)
	}
	slices.SortFunc(servers, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	for _, from := range servers {
		best, bestTo := -1, ""
		for i, l := range leaders {
			if l != from {
				continue
			}
			for _, to := range peers[i] {
				if counts[from]-counts[to] < 2 {
					continue
				}
				if bestTo == "" || counts[to] < counts[bestTo] || (counts[to] == counts[bestTo] && to < bestTo) {
					best, bestTo = i, to
				}
			}
		}
		if best >= 0 {
			return best, bestTo
		}
	}
	return -1, ""
}

// stepDown asks the partition's leader to hand its leadership to server
// to, and waits until a leader other than from is elected.
func stepDown(ctx context.Context, d Deployment, s jetstream.Stream, from, to string) error {
	rctx, cancel := context.WithTimeout(ctx, d.RequestTimeout)
	defer cancel()
	name := s.CachedInfo().Config.Name
	if err := api(rctx, d.NC, "$JS.API.STREAM.LEADER.STEPDOWN."+name, stepDownTo(to)); err != nil {
		return fmt.Errorf("upkeep: step down %s: %w", name, err)
	}
	return await.Until(rctx, await.Poll{First: 20 * time.Millisecond, Most: 250 * time.Millisecond}, nil, func() (bool, error) {
		// Each ask bounded: while the group elects, nobody answers.
		actx, cancel := context.WithTimeout(rctx, d.AttemptTimeout)
		defer cancel()
		info, err := s.Info(actx)
		if err != nil {
			return false, nil // electing
		}
		return info.Cluster != nil && info.Cluster.Leader != "" && info.Cluster.Leader != from, nil
	})
}

// Balancer runs BalanceLeaders at start and whenever Trigger asks (after
// each election of a partition's leader, say), at most once per interval,
// triggers coalesced.
type Balancer struct{ job *job.Job }

// StartBalancer starts balancing d's partitions. Close it.
func StartBalancer(d Deployment, interval time.Duration) *Balancer {
	lb := &Balancer{job: job.New(interval, d.RequestTimeout, func(ctx context.Context, _ string) error {
		_, err := BalanceLeaders(ctx, d)
		return err
	})}
	lb.Trigger()
	return lb
}

// Trigger asks for a balancing round.
func (lb *Balancer) Trigger() { lb.job.Trigger("") }

// Close lets a balancing in progress finish. Idempotent.
func (lb *Balancer) Close() { lb.job.Close() }

// stepDownTo is a stepdown request preferring server to (any: "").
func stepDownTo(to string) any {
	return map[string]any{"placement": map[string]string{"preferred": to}}
}

// api sends a request of the JetStream API that nats.go has no call for
// (stepdowns, peer removals) and returns the error it answers, if any.
func api(ctx context.Context, nc *nats.Conn, subject string, req any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return err
	}
	var resp struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if json.Unmarshal(msg.Data, &resp) == nil && resp.Error != nil {
		return errors.New(resp.Error.Description)
	}
	return nil
}
