package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

func digestOf(t *testing.T, st *stream.Store) []byte {
	t.Helper()
	ctx := context.Background()
	h, _ := st.Header(ctx)
	es, err := st.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := codec.EncodeFile(&h, es)
	leaf, _ := st.Leaf(ctx)
	return append(b, leaf...)
}

// startLocal starts a local cluster of n nodes in a temporary dir; they
// are closed when the test ends (nodes the test replaces in the slice
// included).
func startLocal(t *testing.T, ctx context.Context, n int) ([]cluster.Config, []*cluster.Node) {
	t.Helper()
	cfgs, err := cluster.LocalConfigs(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cluster.StartAll(ctx, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range nodes {
			n.Close(cctx)
		}
	})
	return cfgs, nodes
}

// Three nodes form a cluster; an R3 stream keeps taking appends with a
// node down, and the node comes back to the same session.
func TestThreeNodeCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfgs, nodes := startLocal(t, ctx, 3)
	conn := func(i int) *nats.Conn {
		nc, err := nats.Connect(cfgs[i].Listen, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	scfg := stream.DefaultConfig()
	scfg.Replicas = 3
	b1, err := stream.New(ctx, conn(0), scfg, stream.WithConflictPolicy(stream.Rebase))
	if err != nil {
		t.Fatal(err)
	}
	info, err := b1.Partitions()[0].Stream().Info(ctx)
	if err != nil || info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream is not R3 across the cluster: %+v %v", info.Cluster, err)
	}
	// Left to choose, a client in a cluster replicates (never R1); an
	// existing R1 stream is reported.
	auto := stream.DefaultConfig()
	auto.Stream, auto.Prefix = "AUTO", "auto"
	ba, err := stream.New(ctx, conn(1), auto)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := ba.Partitions()[0].Stream().Info(ctx); err != nil || info.Config.Replicas != 3 || ba.Config().Replicas != 3 || len(ba.Warnings()) != 0 {
		t.Fatalf("default replicas in a cluster: %+v %v %v", info.Config.Replicas, ba.Warnings(), err)
	}
	lonely := stream.DefaultConfig()
	lonely.Stream, lonely.Prefix, lonely.Replicas = "LONELY", "lonely", 1
	if _, err := stream.New(ctx, conn(0), lonely); err != nil {
		t.Fatal(err)
	}
	lonely.Replicas = 0
	bl, err := stream.New(ctx, conn(2), lonely)
	if err != nil {
		t.Fatal(err)
	}
	if w := bl.Warnings(); len(w) != 1 || !strings.Contains(w[0], "1 replica(s)") {
		t.Fatalf("an R1 stream in a cluster was not reported: %v", w)
	}
	st, err := b1.CreateStore(ctx, sessiontest.TestHeader("clustered"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	add := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(10)

	// A node other than the one the writer uses goes down.
	if err := nodes[2].Close(ctx); err != nil {
		t.Fatal(err)
	}
	add(10)
	restarted, err := cluster.Start(ctx, cfgs[2])
	if err != nil {
		t.Fatal(err)
	}
	nodes[2] = restarted
	add(5)
	want := digestOf(t, st)
	b3, err := stream.New(ctx, conn(2), scfg)
	if err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		return sameView(ctx, t, b3, want)
	})

	// A survivor restarts while another node is down (one of three):
	// it becomes ready with a quorum and serves; the missing node
	// rejoins later and catches up.
	if err := nodes[2].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes[1], err = cluster.Start(ctx, cfgs[1]); err != nil {
		t.Fatalf("a node restarted while another is down: %v", err)
	}
	// The stream may have lost its leader with node 1: wait for the
	// election (appends during one are the failover work of the library).
	sessiontest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := b1.Partitions()[0].Stream().Info(ictx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return errors.New("no stream leader yet")
		}
		return nil
	})
	add(5) // through node 0, with node 1 back and node 2 still down
	want = digestOf(t, st)
	b2, err := stream.New(ctx, conn(1), scfg)
	if err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		return sameView(ctx, t, b2, want)
	})
	if nodes[2], err = cluster.Start(ctx, cfgs[2]); err != nil {
		t.Fatalf("the missing node rejoining: %v", err)
	}
	sessiontest.CheckFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		return sameView(ctx, t, b3, want)
	})
}

// sameView says whether b reads the session as want.
func sameView(ctx context.Context, t *testing.T, b *stream.Backend, want []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := b.OpenStore(ctx, "clustered")
	if err != nil {
		return err
	}
	defer got.Close(ctx)
	if !bytes.Equal(digestOf(t, got), want) {
		return errors.New("the restarted node's view differs")
	}
	return nil
}

func TestJoinValidate(t *testing.T) {
	cfgs, _ := cluster.LocalConfigs(t.TempDir(), 3)
	tests := []struct {
		name    string
		mutate  func(*cluster.Config)
		wantErr bool
	}{
		{"local cluster node", func(*cluster.Config) {}, false},
		{"default name", func(c *cluster.Config) { c.ServerName = "sessionlog" }, true},
		{"no listener", func(c *cluster.Config) { c.Listen = "" }, true},
		{"bad cluster name", func(c *cluster.Config) { c.Cluster.Name = "a b" }, true},
		{"no routes", func(c *cluster.Config) { c.Cluster.Routes = nil }, true},
		{"bad route", func(c *cluster.Config) { c.Cluster.Routes = []string{"http://x:1"} }, true},
		{"zero size", func(c *cluster.Config) { c.Cluster.Size = 0 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfgs[0]
			cl := *c.Cluster
			cl.Routes = append([]string(nil), cl.Routes...)
			c.Cluster = &cl
			tt.mutate(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
