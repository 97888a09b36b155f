package stream_test

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
	nc      *nats.Conn
	streams atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Getenv("SESSIONLOG_KILL_CHILD") != "" || os.Getenv("SESSIONLOG_FORK_CHILD") != "" {
		return m.Run() // the child of a kill or fork test: its own node, or the parent's
	}
	return clustertest.RunWithNode("sessionlog-stream-test-", nil, func(n *cluster.Node, c *nats.Conn) int {
		node, nc = n, c
		return m.Run()
	})
}

// newBackend provisions a stream of its own for one test.
func newBackend(t testing.TB, opts ...stream.Option) *stream.Backend {
	t.Helper()
	return newBackendWith(t, stream.DefaultConfig(), opts...)
}

// newBackendWith is newBackend with cfg, but a stream of its own.
func newBackendWith(t testing.TB, cfg stream.Config, opts ...stream.Option) *stream.Backend {
	t.Helper()
	n := streams.Add(1)
	cfg.Stream = fmt.Sprintf("T%d", n)
	cfg.Prefix = fmt.Sprintf("t%d", n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := stream.New(ctx, nc, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newBackendOn opens another backend on an existing stream.
func newBackendOn(t testing.TB, cfg stream.Config) *stream.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
