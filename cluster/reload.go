package cluster

import (
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrReload is returned by ReloadAuth for a change it cannot make to a
// running node.
var ErrReload = errors.New("cluster: cannot reload")

// ReloadAuth gives the running node new users and edges of the same
// tenants: a user or edge no longer listed is disconnected at once and
// refused from then on (a stolen laptop's key revoked), new ones are let
// in, changed limits apply. Tenants cannot be added or removed this way
// (each has its services and streams): that needs a restart.
func (n *Node) ReloadAuth(a *AuthConfig) error {
	if n.cfg.Auth == nil || a == nil {
		return fmt.Errorf("%w: the node was started without tenants, or is given none", ErrReload)
	}
	// What the tenants file does not say stays as the node was given it.
	if a.ClientPermissions.Publish == nil {
		a.ClientPermissions = n.cfg.Auth.ClientPermissions
	}
	if a.EdgePermissions == nil {
		a.EdgePermissions = n.cfg.Auth.EdgePermissions
	}
	if a.MaxConnectionsPerTenant == 0 {
		a.MaxConnectionsPerTenant = n.cfg.Auth.MaxConnectionsPerTenant
	}
	if err := a.Validate(); err != nil {
		return err
	}
	names := func(a *AuthConfig) []string {
		var out []string
		for _, t := range a.Tenants {
			out = append(out, t.Name)
		}
		slices.Sort(out)
		return out
	}
	if was, now := names(n.cfg.Auth), names(a); !slices.Equal(was, now) {
		return fmt.Errorf("%w: the tenants changed (%v, now %v): restart the node", ErrReload, was, now)
	}
	// The service keys stay: the node's own connections keep working.
	conf, err := a.accountsConfig(n.keys, n.cfg.MaxConnections)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	opts := n.opts.Clone()
	opts.Accounts, opts.Users, opts.Nkeys = nil, nil, nil
	if err := opts.ProcessConfigString(conf); err != nil {
		return fmt.Errorf("%w: tenants: %v", ErrInvalidConfig, err)
	}
	if err := n.srv.ReloadOptions(opts); err != nil {
		return fmt.Errorf("%w: %v", ErrReload, err)
	}
	cfg := *a
	n.cfg.Auth, n.opts = &cfg, opts
	return nil
}

// CutLinks closes the edge links signed in to tenant's account and says
// how many it closed. The server re-checks its clients' credentials on a
// reload, but not its leafnode links': a revoked edge's link stayed up,
// and the hub's writes kept reaching it. The account's other edges sign
// in again within a second (their credentials still hold); the revoked
// ones are refused from then on.
func (n *Node) CutLinks(tenant string) (int, error) {
	lz, err := n.srv.Leafz(&server.LeafzOptions{Account: tenant})
	if err != nil {
		return 0, fmt.Errorf("cluster: links of %s: %w", tenant, err)
	}
	cut := 0
	for _, l := range lz.Leafs {
		if err := n.srv.DisconnectClientByID(l.ID); err == nil {
			cut++
		}
	}
	return cut, nil
}
