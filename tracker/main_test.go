package tracker_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/stream"
)

var (
	node    *cluster.Node
	streams atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if os.Getenv("SESSIONLOG_EVENT_CHILD") != "" {
		return m.Run() // a child of the crash test uses the parent's node
	}
	return clustertest.RunWithNode("sessionlog-replica-test-", nil, func(n *cluster.Node, _ *nats.Conn) int {
		node = n
		return m.Run()
	})
}

// connect opens an independent client connection, as another machine would.
func connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// streamConfig names a stream of the test's own.
func streamConfig() stream.Config {
	n := streams.Add(1)
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = fmt.Sprintf("R%d", n), fmt.Sprintf("r%d", n)
	return cfg
}

func backend(t testing.TB, nc *nats.Conn, cfg stream.Config, opts ...stream.Option) *stream.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := stream.New(ctx, nc, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
