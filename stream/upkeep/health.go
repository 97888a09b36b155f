package upkeep

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Health is what an operator checks first, read from JetStream's own
// API (any user of the account can ask; no system account): every stream
// of the account — the partitions, their snapshots, blobs, index and
// dead letters — with its leader, replicas and consumers, the account's
// usage against its limits, and warnings for what needs a look.
type Health struct {
	// Notes are what the node that answered says happened (edges
	// revoked there); not warnings.
	Notes   []string `json:",omitempty"`
	Streams []Stream
	// Servers are the servers holding a replica of any stream.
	Servers []string
	Account AccountUsage
	// Warnings say, a line each, what is wrong or about to be.
	Warnings []string
}

// Stream is one stream.
type Stream struct {
	Name string
	// Partition is the partition's number for a partition's stream, -1
	// for the rest.
	Partition        int
	Messages, Bytes  uint64
	Leader           string // "" while none is elected (or not clustered)
	Clustered        bool
	Replicas         []Replica // the followers
	Consumers        []Consumer
	ConsumersLeftOut int // beyond maxConsumersShown
	// Edges are the edge nodes whose streams this one sources (a hub's).
	Edges []Edge
}

// Edge is an edge node's link as the hub's stream sourcing it sees
// it: how far behind it is, and when it was last heard from.
type Edge struct {
	Domain string
	// Lag is how many of the edge's messages have not come yet (as of
	// when it was last heard from).
	Lag             uint64
	SinceLastActive time.Duration
	Error           string
}

// Replica is a follower of a stream.
type Replica struct {
	Name            string
	Current         bool
	Offline         bool
	Lag             uint64 // operations behind the leader
	SinceLastActive time.Duration
}

// Consumer is one consumer of a stream.
type Consumer struct {
	Name        string
	Durable     bool
	Pending     uint64 // messages not delivered yet
	AckPending  int
	Redelivered int
}

// AccountUsage is the account's JetStream usage and limits (a limit of
// -1 or 0: none).
type AccountUsage struct {
	Store, Memory           uint64
	StoreLimit, MemoryLimit int64
	Streams, Consumers      int
}

// Thresholds of the warnings.
const (
	maxConsumersShown   = 50
	warnReplicaLag      = 10_000
	warnConsumerPending = 100_000
	warnUsage           = 0.8
	// An edge is a laptop that sleeps: a day without its link is worth a
	// line, not an hour.
	warnEdgeQuiet = 24 * time.Hour
)

// ReadHealth reads the account's streams and usage through js;
// partitions numbers the deployment's partitions by their streams' names.
func ReadHealth(ctx context.Context, js jetstream.JetStream, partitions map[string]int) (Health, error) {
	var h Health
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		return h, fmt.Errorf("upkeep: health: %w", err)
	}
	h.Account = AccountUsage{Store: ai.Store, Memory: ai.Memory, StoreLimit: ai.Limits.MaxStore, MemoryLimit: ai.Limits.MaxMemory, Streams: ai.Streams, Consumers: ai.Consumers}
	servers := map[string]bool{}
	list := js.ListStreams(ctx)
	for info := range list.Info() {
		sh := Stream{Name: info.Config.Name, Partition: -1, Messages: info.State.Msgs, Bytes: info.State.Bytes}
		if p, ok := partitions[sh.Name]; ok {
			sh.Partition = p
		}
		if c := info.Cluster; c != nil {
			sh.Leader, sh.Clustered = c.Leader, len(c.Replicas) > 0 || info.Config.Replicas > 1
			if c.Leader != "" {
				servers[c.Leader] = true
			}
			for _, r := range c.Replicas {
				sh.Replicas = append(sh.Replicas, Replica{Name: r.Name, Current: r.Current, Offline: r.Offline, Lag: r.Lag, SinceLastActive: r.Active})
				servers[r.Name] = true
			}
		}
		for _, src := range info.Sources {
			if src.External == nil {
				continue
			}
			eh := Edge{Domain: DomainOf(src.External.APIPrefix), Lag: src.Lag, SinceLastActive: src.Active}
			if src.Error != nil {
				eh.Error = src.Error.Error()
			}
			sh.Edges = append(sh.Edges, eh)
		}
		if s, err := js.Stream(ctx, sh.Name); err == nil {
			cl := s.ListConsumers(ctx)
			for ci := range cl.Info() {
				if len(sh.Consumers) == maxConsumersShown {
					sh.ConsumersLeftOut++
					continue
				}
				sh.Consumers = append(sh.Consumers, Consumer{Name: ci.Name, Durable: ci.Config.Durable != "", Pending: ci.NumPending, AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered})
			}
		}
		h.Streams = append(h.Streams, sh)
	}
	if err := list.Err(); err != nil {
		return h, fmt.Errorf("upkeep: health: %w", err)
	}
	sort.Slice(h.Streams, func(i, j int) bool { return h.Streams[i].Name < h.Streams[j].Name })
	for s := range servers {
		h.Servers = append(h.Servers, s)
	}
	slices.Sort(h.Servers)
	h.Warnings = warnings(h)
	return h, nil
}

// warnings are what an operator should look at.
func warnings(h Health) []string {
	var w []string
	for _, s := range h.Streams {
		if s.Clustered && s.Leader == "" {
			w = append(w, fmt.Sprintf("stream %s has no leader: its writes wait for an election", s.Name))
		}
		for _, r := range s.Replicas {
			switch {
			case r.Offline:
				w = append(w, fmt.Sprintf("stream %s: replica %s is offline", s.Name, r.Name))
			case !r.Current:
				w = append(w, fmt.Sprintf("stream %s: replica %s is not current (%d operations behind)", s.Name, r.Name, r.Lag))
			case r.Lag > warnReplicaLag:
				w = append(w, fmt.Sprintf("stream %s: replica %s is %d operations behind", s.Name, r.Name, r.Lag))
			}
		}
		for _, e := range s.Edges {
			if e.SinceLastActive > warnEdgeQuiet || e.SinceLastActive < 0 {
				w = append(w, fmt.Sprintf("stream %s: edge %s not heard from for %v (%d messages known to be behind): its link is down", s.Name, e.Domain, e.SinceLastActive.Round(time.Second), e.Lag))
			}
		}
		for _, c := range s.Consumers {
			if c.Durable && c.Pending > warnConsumerPending {
				w = append(w, fmt.Sprintf("stream %s: consumer %s has %d messages pending", s.Name, c.Name, c.Pending))
			}
		}
	}
	a := h.Account
	if a.StoreLimit > 0 && float64(a.Store) > warnUsage*float64(a.StoreLimit) {
		w = append(w, fmt.Sprintf("the account stores %d of its %d bytes", a.Store, a.StoreLimit))
	}
	if a.MemoryLimit > 0 && float64(a.Memory) > warnUsage*float64(a.MemoryLimit) {
		w = append(w, fmt.Sprintf("the account holds %d of its %d bytes in memory", a.Memory, a.MemoryLimit))
	}
	return w
}

// DomainOf is the JetStream domain of an API prefix ($JS.<domain>.API).
func DomainOf(api string) string {
	return strings.TrimSuffix(strings.TrimPrefix(api, "$JS."), ".API")
}
