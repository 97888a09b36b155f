package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/upkeep"
)

// TestDeadReplicaIsReplaced: on five nodes, a node holding a replica of
// the sessions' stream goes away for good. Its replica is counted dead
// after DeadAfter and removed from the peer set by the repairer on the
// stream's leader; the cluster places a fresh one on a node outside the
// peer set, which catches up. Without the repairer the stream would stay
// one copy short for as long as the node is gone (nats-server does not
// move replicas by itself).
func TestDeadReplicaIsReplaced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_, nodes := startLocal(t, ctx, 5)
	repair := upkeep.RepairConfig{Every: 200 * time.Millisecond, StuckAfter: 5 * time.Second, DeadAfter: 2 * time.Second,
		Log: func(format string, args ...any) { t.Logf(format, args...) }}
	scfg := stream.DefaultConfig()
	scfg.Replicas = 3
	backends := make([]*stream.Backend, len(nodes))
	for i, n := range nodes {
		nc, err := n.Connect(nats.ReconnectWait(50 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if backends[i], err = stream.New(ctx, nc, scfg, stream.WithConflictPolicy(stream.Rebase), stream.WithReplicaRepair(repair)); err != nil {
			t.Fatal(err)
		}
		defer backends[i].Close(ctx)
	}
	peers := func(b *stream.Backend) (leader string, all []string, current bool, err error) {
		info, err := b.Partitions()[0].Stream().Info(ctx)
		if err != nil {
			return "", nil, false, err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return "", nil, false, fmt.Errorf("no leader")
		}
		current = true
		all = []string{info.Cluster.Leader}
		for _, r := range info.Cluster.Replicas {
			all = append(all, r.Name)
			current = current && r.Current && !r.Offline
		}
		return info.Cluster.Leader, all, current, nil
	}
	leader, before, _, err := peers(backends[0])
	if err != nil {
		t.Fatal(err)
	}
	// The victim: a node holding a replica, not the leader.
	victim := -1
	for i, n := range nodes {
		name := n.Server().Name()
		if name != leader && slices.Contains(before, name) {
			victim = i
			break
		}
	}
	if victim < 0 {
		t.Fatalf("no follower among %v", before)
	}
	gone := nodes[victim].Server().Name()
	alive := backends[(victim+1)%len(nodes)]
	st, err := alive.CreateStore(ctx, sessiontest.TestHeader("repaired"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	if err := backends[victim].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nodes[victim].Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Writes go on meanwhile, and after.
	n := 0
	sessiontest.CheckFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint(n))}); err != nil {
			return err
		}
		n++
		_, now, current, err := peers(alive)
		switch {
		case err != nil:
			return err
		case slices.Contains(now, gone):
			return fmt.Errorf("%s still in the peer set %v", gone, now)
		case len(now) != 3 || !current:
			return fmt.Errorf("peer set %v: not three current replicas yet", now)
		}
		return nil
	})
	var repairs []upkeep.Repair
	for i, b := range backends {
		if i != victim {
			repairs = append(repairs, b.Repairs()...)
		}
	}
	found := false
	for _, r := range repairs {
		if r.Peer == gone && r.Action == "peer-remove" && r.Err == "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no peer-remove of %s among the repairs %+v", gone, repairs)
	}
	// Every entry is on the new replica's stream as on the others.
	es, err := st.Entries(ctx)
	if err != nil || len(es) != n {
		t.Fatalf("%d entries, want %d: %v", len(es), n, err)
	}
}
