package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/tenants"
)

// reloadOnHangup reads the tenants file again on SIGHUP: users and edges
// added are let in, and those removed are cut off at once (a stolen
// laptop's key revoked: its link is closed, and the tenant's streams stop
// sourcing its domain). Tenants themselves are fixed until a restart.
func (a *apiFlags) reloadOnHangup(node *cluster.Node, x *api) {
	if a.tenants == "" {
		return
	}
	x.run(func(ctx context.Context) {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			msg, err := a.reloadTenants(ctx, node, x)
			if err != nil {
				msg = fmt.Sprintf("sessionlog: tenants file not reloaded (the node goes on as it was): %v", err)
			}
			a.say(msg)
		}
	})
}

// reloadTenants applies the tenants file as it is now.
func (a *apiFlags) reloadTenants(ctx context.Context, node *cluster.Node, x *api) (string, error) {
	f, err := tenants.Load(a.tenants)
	if err != nil {
		return "", err
	}
	if err := node.ReloadAuth(f.Auth()); err != nil {
		return "", err
	}
	var revoked []string
	for i, t := range x.srv.Tenants {
		own, _ := f.Of(t.Name)
		var now []string
		for _, e := range own.Edges {
			now = append(now, e.Domain)
		}
		x.services[i].SetEdgeDomains(now)
		for _, d := range t.Edges {
			if slices.Contains(now, d) {
				continue
			}
			if _, err := x.backends[i].Unsource(ctx, d); err != nil {
				return "", fmt.Errorf("edge %s of %s revoked, but its sessions streams still source it: %w", d, t.Name, err)
			}
			revoked = append(revoked, t.Name+"/"+d)
		}
		x.srv.Tenants[i].Edges = now
	}
	msg := "sessionlog: tenants file reloaded"
	if len(revoked) > 0 {
		msg += "; edges revoked: " + strings.Join(revoked, ", ")
	}
	return msg, nil
}

// say writes a line to serve's log.
func (a *apiFlags) say(msg string) {
	if a.log != nil {
		fmt.Fprintln(a.log, msg)
	}
}
