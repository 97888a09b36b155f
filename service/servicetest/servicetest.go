// Package servicetest starts nodes with tenants and their services for
// tests of the service, the gateway and clients.
package servicetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/host"
	"github.com/agentcore/sessionlog/search"
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
	return StartTenantsWith(t, stream.DefaultConfig(), tenants...)
}

// StartTenantsWith is StartTenants with the tenants' streams configured
// by scfg; Tenants.Stream is the layout as provisioned.
func StartTenantsWith(t testing.TB, scfg stream.Config, tenants ...cluster.Tenant) *Tenants {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := cluster.DefaultConfig(t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	cfg.Auth = &cluster.AuthConfig{Tenants: tenants, ClientPermissions: service.ClientPermissions(scfg, api.DefaultSubject)}
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The node's services as serve starts them: each tenant's store and
	// responder connections, backend, dead letters, an index of its own
	// (in memory), and service.
	sc := host.Config{Stream: scfg, Service: service.DefaultConfig(sessiontest.TestConfig()),
		OpenSearch: func(ctx context.Context, _ string, b *stream.Backend) (*search.Index, *search.Indexer, error) {
			x, _, err := search.Open(search.DefaultConfig(""))
			if err != nil {
				return nil, nil, err
			}
			ix, err := search.Follow(ctx, x, b)
			if err != nil {
				return nil, nil, errors.Join(err, x.Close())
			}
			return x, ix, nil
		}}
	for _, tn := range tenants {
		sc.Tenants = append(sc.Tenants, host.Tenant{Name: tn.Name})
	}
	srv, err := host.Start(ctx, n, sc)
	if err != nil {
		n.Close(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Error(err)
		}
		n.Close(context.Background())
	})
	return &Tenants{Node: n, Stream: srv.Backends[0].Config()}
}

var own atomic.Int64

// Backend provisions a stream of its own (a name no other test of the
// process uses) on nc.
func Backend(t testing.TB, nc *nats.Conn, opts ...stream.Option) *stream.Backend {
	t.Helper()
	return Partitioned(t, nc, 1, opts...)
}

// Partitioned is Backend with sessions spread over that many partitions.
func Partitioned(t testing.TB, nc *nats.Conn, partitions int, opts ...stream.Option) *stream.Backend {
	t.Helper()
	n := own.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = fmt.Sprintf("SVC%d", n), fmt.Sprintf("svc%d", n)
	cfg.Partitions = partitions
	b, err := stream.New(ctx, nc, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Start runs a service on b over nc, on a subject and queue group of its
// own, until the test ends (an error closing it fails the test). tweak
// may adjust the config.
func Start(t testing.TB, nc *nats.Conn, b *stream.Backend, tweak func(*service.Config)) (*service.Service, service.Config) {
	t.Helper()
	n := own.Add(1)
	cfg := service.DefaultConfig(sessiontest.TestConfig())
	cfg.Subject, cfg.QueueGroup = fmt.Sprintf("svc%d.v1", n), fmt.Sprintf("q%d", n)
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := service.Start(ctx, nc, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return svc, cfg
}
