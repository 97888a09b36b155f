package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentcore/sessionlog/internal/await"
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
func (b *Backend) Leaders(ctx context.Context) ([]string, LeaderCounts, error) {
	leaders, _, counts, err := b.leaderState(ctx)
	return leaders, counts, err
}

// leaderState is Leaders with each partition's current followers.
func (b *Backend) leaderState(ctx context.Context) ([]string, [][]string, LeaderCounts, error) {
	leaders := make([]string, len(b.parts))
	peers := make([][]string, len(b.parts)) // current peers that could lead
	err := b.eachPart(func(i int, p *Backend) error {
		// Each ask bounded: a partition electing answers nothing, and
		// counts as led by nobody for now.
		actx, cancel := context.WithTimeout(ctx, p.cfg.AttemptTimeout)
		defer cancel()
		info, err := p.stream.Info(actx)
		if jsx.Ambiguous(err) && ctx.Err() == nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream: leaders: %s: %w", p.cfg.Stream, err)
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
func (b *Backend) BalanceLeaders(ctx context.Context) (int, error) {
	moved := 0
	for range len(b.parts) {
		leaders, peers, counts, err := b.leaderState(ctx)
		if err != nil {
			return moved, err
		}
		part, to := planMove(leaders, counts, peers)
		if part < 0 {
			return moved, nil
		}
		if err := b.parts[part].stepDown(ctx, leaders[part], to); err != nil {
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
func (b *Backend) stepDown(ctx context.Context, from, to string) error {
	rctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	if err := b.jsAPI(rctx, "$JS.API.STREAM.LEADER.STEPDOWN."+b.cfg.Stream, stepDownTo(to)); err != nil {
		return fmt.Errorf("stream: step down %s: %w", b.cfg.Stream, err)
	}
	return await.Until(rctx, await.Poll{First: 20 * time.Millisecond, Most: 250 * time.Millisecond}, nil, func() (bool, error) {
		// Each ask bounded: while the group elects, nobody answers.
		actx, cancel := context.WithTimeout(rctx, b.cfg.AttemptTimeout)
		defer cancel()
		info, err := b.stream.Info(actx)
		if err != nil {
			return false, nil // electing
		}
		return info.Cluster != nil && info.Cluster.Leader != "" && info.Cluster.Leader != from, nil
	})
}

// leaderBalancer runs BalanceLeaders at start and after each election of
// a partition's leader (the server's advisories, heard by the backend's
// subscription to them), coalesced by the job.
type leaderBalancer struct{ job *job.Job }

func (b *Backend) startBalancer(interval time.Duration) *leaderBalancer {
	lb := &leaderBalancer{job: job.New(interval, b.cfg.RequestTimeout, func(ctx context.Context, _ string) error {
		_, err := b.BalanceLeaders(ctx)
		return err
	})}
	lb.trigger()
	return lb
}

// trigger asks for a balancing round.
func (lb *leaderBalancer) trigger() { lb.job.Trigger("") }

// close lets a balancing in progress finish. Idempotent.
func (lb *leaderBalancer) close() { lb.job.Close() }

// stepDownTo is a stepdown request preferring server to (any: "").
func stepDownTo(to string) any {
	return map[string]any{"placement": map[string]string{"preferred": to}}
}

// jsAPI sends a request of the JetStream API that nats.go has no call for
// (stepdowns, peer removals) and returns the error it answers, if any.
func (b *Backend) jsAPI(ctx context.Context, subject string, req any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := b.nc.RequestWithContext(ctx, subject, data)
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
