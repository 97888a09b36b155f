package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// The node's own connection, cut by its server (a slow consumer, a stale
// ping under load), comes back to its own server every time. Left to
// nats.go's defaults it tried the cluster's other nodes too, which refuse
// this node's keys, and after the same refusal twice it closed for good:
// the service answered "connection closed" for as long as the process
// lived (issue 68, item 5).
func TestOwnConnectionsStayWithTheirNode(t *testing.T) {
	ctx := context.Background()
	cfgs, err := cluster.LocalConfigs(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfgs {
		cfgs[i].Auth = &cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "acme", Users: []cluster.User{{Name: "u", Password: "p"}}}}, ClientPermissions: perms}
	}
	nodes, err := cluster.StartAll(ctx, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close(ctx)
		}
	})
	n := nodes[0]
	nc, err := n.ConnectTenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	// The cluster's other nodes are known to the client (the servers'
	// INFO tells it) before it is cut.
	sessiontest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if len(nc.DiscoveredServers()) == 0 && len(n.Server().ActivePeers()) < 2 {
			return errors.New("the cluster has not formed")
		}
		return nil
	})
	for round := range 12 {
		id, err := nc.GetClientID()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := n.Server().DisconnectClientByID(id); err != nil {
			t.Fatalf("round %d: kick: %v", round, err)
		}
		sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			switch {
			case nc.IsClosed():
				return nil // reported below
			case !nc.IsConnected():
				return errors.New("not connected again yet")
			case nc.ConnectedServerName() != cfgs[0].ServerName:
				return errors.New("connected to " + nc.ConnectedServerName())
			}
			if got, _ := nc.GetClientID(); got == id {
				return errors.New("still the cut connection")
			}
			return nil
		})
		if nc.IsClosed() {
			t.Fatalf("round %d: the node's own connection closed for good (%v)", round, nc.LastError())
		}
		if err := nc.Flush(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	sessiontest.CheckFor(t, 5*time.Second, 20*time.Millisecond, n.Ready)
	select {
	case <-n.Broken():
		t.Fatalf("the node broke: %v", n.BrokenErr())
	default:
	}
}

// A node whose own connection cannot reach its server says so: not
// ready after a moment, then broken (the process exits and is started
// again), with the connection's name in both.
func TestNodeBreaksWhenItsConnectionStaysAway(t *testing.T) {
	ctx := context.Background()
	cfg := cluster.DefaultConfig(t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	cfg.BrokenAfter = 3 * time.Second
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	nc, err := n.Connect(nats.Name("sessionlog/watched"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Ready(); err != nil {
		t.Fatal(err)
	}
	// Its server goes away under it (what a wedged server looks like to
	// its connections).
	n.Server().Shutdown()
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n.Ready() == nil {
			return errors.New("still ready")
		}
		return nil
	})
	select {
	case <-n.Broken():
		if err := n.BrokenErr(); !errors.Is(err, cluster.ErrBroken) || !strings.Contains(err.Error(), "sessionlog/watched") {
			t.Fatalf("broken with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("not broken after its connection stayed away (connected: %v)", nc.IsConnected())
	}
}
