package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// Partitions add capacity only with their leaders on different nodes:
// with every leader moved to one node, BalanceLeaders spreads them two
// per node, and a second run moves nothing.
func TestPartitionLeadersAreSpread(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfgs, _ := startLocal(t, ctx, 3)
	nc, err := cluster.Dial(ctx, cfgs[0].Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	scfg := stream.DefaultConfig()
	scfg.Partitions = 6
	b, err := stream.New(ctx, nc, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	// Every partition led by n1 (the server's own choice is random).
	for _, p := range b.Partitions() {
		sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
			info, err := p.Stream().Info(ctx)
			if err != nil {
				return err
			}
			if l := info.Cluster.Leader; l == "n1" {
				return nil
			} else if l == "" {
				return fmt.Errorf("%s: electing", info.Config.Name)
			}
			return stepDownTo(ctx, nc, info.Config.Name, "n1")
		})
	}
	_, counts, err := b.Leaders(ctx)
	if err != nil || counts["n1"] != 6 {
		t.Fatalf("before: %v %v", counts, err)
	}
	moved, err := b.BalanceLeaders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, counts, err = b.Leaders(ctx)
	if err != nil || counts["n1"] != 2 || counts["n2"] != 2 || counts["n3"] != 2 || moved != 4 {
		t.Fatalf("after moving %d: %v %v", moved, counts, err)
	}
	if again, err := b.BalanceLeaders(ctx); err != nil || again != 0 {
		t.Fatalf("a balanced layout moved %d (%v)", again, err)
	}
	// A node that balances (serve's backends) spreads them again after
	// elections skew them.
	nb, err := stream.New(ctx, nc, b.Config(), stream.WithLeaderBalancing(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close(ctx)
	for _, p := range b.Partitions() {
		name := p.Stream().CachedInfo().Config.Name
		_ = stepDownTo(ctx, nc, name, "n1")
	}
	sessiontest.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		_, counts, err := nb.Leaders(ctx)
		if err != nil || counts["n1"] != 2 || counts["n2"] != 2 || counts["n3"] != 2 {
			return fmt.Errorf("leaders %v (%v)", counts, err)
		}
		return nil
	})
	// A listing through another node sees every session created before
	// it: the newest index records are read from each partition's leader,
	// never from a replica that may not hold them yet.
	other, err := cluster.Dial(ctx, cfgs[2].Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ob, err := stream.New(ctx, other, b.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close(ctx)
	for i := range 30 {
		id := fmt.Sprintf("fresh%02d", i)
		st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
		page, err := ob.List(ctx, session.ListOptions{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) == 0 || page.Sessions[0].ID != id {
			t.Fatalf("a listing through n3 right after creating %s: %+v", id, page.Sessions)
		}
	}
}

// stepDownTo asks a stream's leader to hand over to server, and reports
// an error until it has.
func stepDownTo(ctx context.Context, nc *nats.Conn, name, server string) error {
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": server}})
	if _, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+name, req); err != nil {
		return err
	}
	return fmt.Errorf("%s: asked to move to %s", name, server)
}
