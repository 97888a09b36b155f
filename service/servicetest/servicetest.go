// Package servicetest starts nodes with tenants and their services for
// tests of the service, the gateway and clients.
package servicetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// Tenants is a node with tenants, each served by its own service on the
// node's credentials inside the tenant's account.
type Tenants struct {
	Node   *cluster.Node
	Stream stream.Config
}

// StartTenants starts the node (listening on a random loopback port, in
// a temp dir) and a service per tenant, all stopped when the test ends.
func StartTenants(t testing.TB, tenants ...cluster.Tenant) *Tenants {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scfg := stream.DefaultConfig()
	cfg := cluster.DefaultConfig(t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	cfg.Auth = &cluster.AuthConfig{Tenants: tenants, ClientPermissions: service.ClientPermissions(scfg, "sessionlog.v1")}
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var svcs []*service.Service
	t.Cleanup(func() {
		for _, s := range svcs {
			s.Close(context.Background())
		}
		n.Close(context.Background())
	})
	for _, tn := range tenants {
		nc, err := n.ConnectTenant(tn.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := stream.New(ctx, nc, scfg)
		if err != nil {
			t.Fatal(err)
		}
		sc := service.DefaultConfig(sessiontest.TestConfig())
		sc.Tenant = tn.Name
		svc, err := service.Start(ctx, nc, b, sc)
		if err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	return &Tenants{Node: n, Stream: scfg}
}
