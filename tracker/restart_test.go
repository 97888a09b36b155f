package tracker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster/clustertest"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

// The server restarts under a tailing replica: its consumer is gone, and
// the replica resumes from the last sequence it applied — nothing twice,
// nothing skipped — and ends up equal to the stream.
func TestReplicaSurvivesServerRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := cluster.DefaultConfig(dir)
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	n1, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := n1.ClientURL()
	dial := func() *nats.Conn {
		nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	wnc, rnc := dial(), dial()
	scfg := stream.DefaultConfig()
	wb := backend(t, wnc, scfg)
	st, err := wb.CreateStore(ctx, sessiontest.TestHeader("restarted"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	appendN := func(n int) uint64 {
		t.Helper()
		for range n {
			if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("x")}); err != nil {
				t.Fatal(err)
			}
		}
		seq, _ := st.Sequence(ctx)
		return seq
	}
	rc := tracker.DefaultConfig()
	rc.RetryInterval = 50 * time.Millisecond
	r, err := tracker.Start(ctx, backend(t, rnc, scfg), rc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	replicaDigest(t, r, "restarted") // hold the tree, so the tail applies to it
	seq := appendN(10)
	wait := func(seq uint64) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := r.WaitFor(wctx, "restarted", seq); err != nil {
			t.Fatalf("%v (status %+v)", err, r.Status())
		}
	}
	wait(seq)

	if err := n1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	n2, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Clients close before the server does, or their last writes wait for
	// a server that is gone.
	t.Cleanup(func() { n2.Close(ctx) })
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !wnc.IsConnected() || !rnc.IsConnected() {
			return errors.New("clients not reconnected")
		}
		return nil
	})
	seq = appendN(15)
	wait(seq)
	fresh, err := wb.OpenStore(ctx, "restarted")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	if !bytes.Equal(replicaDigest(t, r, "restarted"), storeDigest(t, fresh)) {
		t.Fatal("replica differs from the stream after the restart")
	}
	if got := r.Status(); got.Resets != 0 {
		t.Fatalf("status %+v: entries were applied out of order or twice", got)
	}
}
