package gateway

// HoldAssembling takes every turn to put a reply of several pages
// together, as that many slow ones would; release gives them back.
func HoldAssembling(g *Gateway) (release func()) {
	for range cap(g.assembling) {
		g.assembling <- struct{}{}
	}
	return func() {
		for range cap(g.assembling) {
			<-g.assembling
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
