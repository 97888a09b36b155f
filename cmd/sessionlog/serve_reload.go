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

// reloadTenants applies the tenants file as it is now. Once the node
// has taken the new credentials the file is reloaded, whatever follows
// fails: what did not follow is said after that (the node said "not
// reloaded" when a revoked edge's sourcing could not be stopped, while
// its credentials were already refused).
func (a *apiFlags) reloadTenants(ctx context.Context, node *cluster.Node, x *api) (string, error) {
	f, err := tenants.Load(a.tenants)
	if err != nil {
		return "", err
	}
	if err := node.ReloadAuth(f.Auth()); err != nil {
		return "", err
	}
	var revoked, failed []string
	for i, t := range x.srv.Tenants {
		own, _ := f.Of(t.Name)
		var now []string
		for _, e := range own.Edges {
			now = append(now, e.Domain)
		}
		x.services[i].SetEdgeDomains(now)
		var gone []string
		for _, d := range t.Edges {
			if !slices.Contains(now, d) {
				gone = append(gone, d)
			}
		}
		x.srv.Tenants[i].Edges = now
		if len(gone) == 0 {
			continue
		}
		// One whose sourcing could not be stopped stays listed: the next
		// reload tries again.
		kept := slices.Clone(now)
		// Its link first: nothing more reaches it, whatever follows.
		if _, err := node.CutLinks(t.Name); err != nil {
			failed = append(failed, fmt.Sprintf("the links of %s not cut: %v", t.Name, err))
		}
		for _, d := range gone {
			revoked = append(revoked, t.Name+"/"+d)
			if _, err := x.backends[i].Unsource(ctx, d); err != nil {
				failed = append(failed, fmt.Sprintf("edge %s of %s revoked, but its sessions streams still source it: %v", d, t.Name, err))
				kept = append(kept, d)
			}
		}
		x.srv.Tenants[i].Edges = kept
	}
	msg := "sessionlog: tenants file reloaded"
	x.state.noteRevoked(revoked)
	if len(revoked) > 0 {
		msg += "; edges revoked: " + strings.Join(revoked, ", ") + " (links cut; the tenant's other edges link again within a second)"
	}
	if len(failed) > 0 {
		msg += "; but " + strings.Join(failed, "; ") + " (send SIGHUP again)"
	}
	return msg, nil
}

// say writes a line to serve's log.
func (a *apiFlags) say(msg string) {
	if a.log != nil {
		fmt.Fprintln(a.log, msg)
	}
}
