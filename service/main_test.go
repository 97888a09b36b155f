package service_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/stream"
)

var (
	node *cluster.Node
	nc   *nats.Conn
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	return clustertest.RunWithNode("sessionlog-service-test-", nil, func(n *cluster.Node, c *nats.Conn) int {
		node, nc = n, c
		return m.Run()
	})
}

// fixture is a service of its own (own stream and subject) and a client.
type fixture struct {
	b   *stream.Backend
	svc *service.Service
	c   *api.Client
	cfg service.Config
	// caughtUp, when the fixture has a search index, waits for it to
	// hold what was appended.
	caughtUp func()
}

func start(t testing.TB, tweak func(*service.Config)) *fixture {
	t.Helper()
	return startOn(t, 1, tweak)
}

// startOn is start on a stream of that many partitions.
func startOn(t testing.TB, partitions int, tweak func(*service.Config)) *fixture {
	t.Helper()
	b := servicetest.Partitioned(t, nc, partitions)
	svc, cfg := servicetest.Start(t, nc, b, tweak)
	return &fixture{b: b, svc: svc, c: api.NewClient(nc, cfg.Subject), cfg: cfg}
}

func (f *fixture) call(t testing.TB, op string, req, reply any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.c.Call(ctx, op, req, reply); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
}

func (f *fixture) callErr(op string, req any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.c.Call(ctx, op, req, nil)
}

func (f *fixture) raw(op, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := f.c.Raw(ctx, op, []byte(body))
	return err
}

// newClient is a client on a connection of its own.
func newClient(t *testing.T, subject string) *api.Client {
	t.Helper()
	return api.NewClient(newConn(t), subject)
}

// newConn is a connection of the test's own to the node.
func newConn(t *testing.T) *nats.Conn {
	t.Helper()
	c, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// callErr2 is callErr with a reply.
func (f *fixture) callErr2(op string, req, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.c.Call(ctx, op, req, reply)
}
