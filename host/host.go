// Package host wires a node's sessionlog services: for the node's
// default account, or for each tenant's account, a store connection and a
// responding one (which may publish only to inboxes), the stream backend
// with the tenant's own settings, the dead-letter stream, the search
// index, and the sessionlog.v1 service. `sessionlog serve` starts it, and
// so do tests (service/servicetest), the same way.
package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
	"github.com/agentcore/sessionlog/usage"
)

// Config is what Start starts.
type Config struct {
	// Stream is the layout and settings of every account's streams.
	Stream stream.Config
	// Service is every service's configuration (Tenant, Owners and
	// Search are set per account).
	Service service.Config
	// Tenants are the accounts to serve, each with its own settings;
	// none: the node's default account, without authentication.
	Tenants []Tenant
	// BackendOptions apply to every backend.
	BackendOptions []stream.Option
	// OpenSearch, when set, opens an account's search index and the
	// indexer that keeps it current ("" is the default account).
	OpenSearch func(ctx context.Context, tenant string, b *stream.Backend) (*search.Index, *search.Indexer, error)
}

// Tenant is an account served, with its own settings in place of the
// deployment's when set.
type Tenant struct {
	Name      string
	Offload   *int
	Redact    *codec.RedactConfig
	Retention *lifecycle.Policy
	// Edges are the JetStream domains of the tenant's edge nodes, whose
	// links may ask its service to take their sessions in.
	Edges []string
	// Prices prices its model calls (its negotiated prices before the
	// table's); nil: the service's.
	Prices *usage.Table
}

// Services is what Start started, an entry per account served (in the
// order of Config.Tenants).
type Services struct {
	Tenants  []Tenant
	Backends []*stream.Backend
	Services []*service.Service
	indexes  []*search.Index
	indexers []*search.Indexer
	conns    []*nats.Conn
}

// Start starts the services of cfg on node. On an error, what it started
// is closed again.
func Start(ctx context.Context, node *cluster.Node, cfg Config) (*Services, error) {
	s := &Services{}
	accounts := cfg.Tenants
	if len(accounts) == 0 {
		accounts = []Tenant{{}}
	}
	sc := cfg.Stream
	for _, t := range accounts {
		store, respond, err := s.connect(node, t.Name)
		if err != nil {
			return nil, errors.Join(err, s.Close(ctx))
		}
		tsc := sc
		if t.Offload != nil {
			tsc.OffloadThreshold = *t.Offload
		}
		if t.Redact != nil {
			tsc.Redact = t.Redact
		}
		b, err := stream.New(ctx, store, tsc, cfg.BackendOptions...)
		if err != nil {
			return nil, errors.Join(err, s.Close(ctx))
		}
		// Every account the same layout: the first one's settles a count
		// left to the deployment.
		sc.Partitions = b.Config().Partitions
		s.Backends, s.Tenants = append(s.Backends, b), append(s.Tenants, t)
		// Clients may not create streams: the dead letters' is made here.
		if err := tracker.EnsureDeadLetters(ctx, b); err != nil {
			return nil, errors.Join(err, s.Close(ctx))
		}
		svcCfg := cfg.Service
		svcCfg.Tenant = t.Name
		svcCfg.EdgeDomains = t.Edges
		if t.Prices != nil {
			svcCfg.Prices = t.Prices
		}
		if t.Name != "" {
			svcCfg.Owners = node.TenantOwners(t.Name)
		}
		if cfg.OpenSearch != nil {
			x, ix, err := cfg.OpenSearch(ctx, t.Name, b)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("host: search of %q: %w", t.Name, err), s.Close(ctx))
			}
			s.indexes, s.indexers = append(s.indexes, x), append(s.indexers, ix)
			svcCfg.Search = x
		}
		svc, err := service.Start(ctx, respond, b, svcCfg)
		if err != nil {
			return nil, errors.Join(err, s.Close(ctx))
		}
		s.Services = append(s.Services, svc)
	}
	return s, nil
}

// connect makes an account's two connections: with tenants, one that may
// do anything in the account (the store's) and one that may publish only
// to inboxes (the service's answers); without, the node's one connection.
func (s *Services) connect(node *cluster.Node, tenant string) (store, respond *nats.Conn, err error) {
	if tenant == "" {
		nc, err := node.Connect()
		if err != nil {
			return nil, nil, err
		}
		s.conns = append(s.conns, nc)
		return nc, nc, nil
	}
	if store, err = node.ConnectTenant(tenant); err != nil {
		return nil, nil, err
	}
	s.conns = append(s.conns, store)
	if respond, err = node.ConnectTenantResponder(tenant); err != nil {
		return nil, nil, err
	}
	s.conns = append(s.conns, respond)
	return store, respond, nil
}

// Close stops the services, then the search indexes, the backends and the
// connections, and reports every error. It is idempotent.
func (s *Services) Close(ctx context.Context) error {
	var errs []error
	for _, svc := range s.Services {
		errs = append(errs, svc.Close(ctx))
	}
	for _, ix := range s.indexers {
		errs = append(errs, ix.Close(ctx))
	}
	for _, x := range s.indexes {
		errs = append(errs, x.Close())
	}
	for _, b := range s.Backends {
		errs = append(errs, b.Close(ctx))
	}
	for _, nc := range s.conns {
		nc.Close()
	}
	s.Services, s.indexers, s.indexes, s.Backends, s.conns = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}
