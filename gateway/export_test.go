package gateway

import "context"

// HoldAssembling takes every turn to put a reply of several pages
// together, as that many slow ones would; release gives them back.
func HoldAssembling(g *Gateway) (release func()) {
	s := g.assembling
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.max - s.used
	s.used = s.max
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.used -= held
	}
}

// HoldAssemblingAs takes every turn tenant's user may have, as its own
// large replies would, and says how many it got.
func HoldAssemblingAs(g *Gateway, tenant, user string) (n int, release func()) {
	var releases []func()
	for {
		r, refused, err := g.assembling.acquire(context.Background(), tenant, tenant+"/"+user, 0)
		if err != nil || refused != nil {
			break
		}
		releases = append(releases, r)
	}
	return len(releases), func() {
		for _, r := range releases {
			r()
		}
	}
}

// MCPServers counts the MCP servers the gateway keeps for its callers,
// and the sessions they hold open.
func MCPServers(g *Gateway) (servers, sessions int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, u := range g.users.All() {
		if u.mcp == nil {
			continue
		}
		servers++
		for range u.mcp.Sessions() {
			sessions++
		}
	}
	return servers, sessions
}
