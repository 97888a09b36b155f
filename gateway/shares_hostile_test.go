package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// One tenant's large reads cannot refuse another's (issue 68, item 3):
// with every turn acme may have taken by its own replies, bob's whole
// context is put together at once, and acme's next is refused saying its
// own share is taken; when the node's turns are all taken, the refusal
// says nothing of whose they are.
func TestLargeRepliesAreSharedFairly(t *testing.T) {
	g, cfg := authGateway(t,
		cluster.Tenant{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}, {Name: "carol", Password: "carol-pw"}}},
		cluster.Tenant{Name: "bob", Users: []cluster.User{{Name: "bert", Password: "bert-pw"}}},
	)
	u := g.URL() + "/v1/sessions"
	alice, carol, bert := []string{"alice", "alice-pw"}, []string{"carol", "carol-pw"}, []string{"bert", "bert-pw"}
	// A context of several pages for each tenant.
	for _, who := range [][]string{alice, bert} {
		if r := do(t, "POST", u, `{"id":"big"}`, who...); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
		for i := range 40 {
			body := fmt.Sprintf(`{"entries":[{"type":"message","message":{"role":"user","content":"%02d%s"}}]}`, i, strings.Repeat("x", 40<<10))
			if r := do(t, "POST", u+"/big/entries", body, who...); r.status != 200 {
				t.Fatal(r.status, r.body)
			}
		}
	}
	if r := do(t, "GET", u+"/big/context", "", alice...); r.status != 200 {
		t.Fatalf("acme's whole context: %d %v", r.status, r.body)
	}
	// (The gateway learns a caller's tenant on its first request.)
	if r := do(t, "GET", u+"/big/context", "", carol...); r.status != 200 {
		t.Fatalf("carol's whole context: %d %v", r.status, r.body)
	}

	held, release := gateway.HoldAssemblingAs(g, "acme", "alice")
	if held < 1 || held >= cfg.MaxAssembling {
		t.Fatalf("acme's user took %d of %d turns", held, cfg.MaxAssembling)
	}
	if r := do(t, "GET", u+"/big/context", "", bert...); r.status != 200 {
		t.Fatalf("bob's whole context while acme holds its share: %d %v", r.status, r.body)
	}
	own := do(t, "GET", u+"/big/context", "", alice...)
	msg := fmt.Sprint(own.body["error"])
	if own.status != 429 || errCode(own) != "rate_limited" || !strings.Contains(msg, "this user's") {
		t.Fatalf("acme's next while its share is taken: %d %v", own.status, own.body)
	}
	if held == cfg.MaxAssemblingPerTenant {
		if r := do(t, "GET", u+"/big/context", "", carol...); r.status != 429 || !strings.Contains(fmt.Sprint(r.body["error"]), "this tenant's") {
			t.Fatalf("another of acme's users while acme's share is taken: %d %v", r.status, r.body)
		}
	}
	release()

	// Every turn of the node taken: bob waits, then is refused, and is
	// told nothing of who holds them.
	releaseAll := gateway.HoldAssembling(g)
	busy := do(t, "GET", u+"/big/context", "", bert...)
	text := fmt.Sprint(busy.body["error"])
	if busy.status != 429 || strings.Contains(text, "tenant") || strings.Contains(text, "acme") || strings.Contains(text, "being put together:") {
		t.Fatalf("bob when every turn is taken: %d %v", busy.status, busy.body)
	}
	releaseAll()
	if r := do(t, "GET", u+"/big/context", "", bert...); r.status != 200 {
		t.Fatalf("bob once turns are free: %d", r.status)
	}
}

// authGateway starts a node with tenants and a gateway with Auth on it,
// closed when the test ends.
func authGateway(t *testing.T, tenants ...cluster.Tenant) (*gateway.Gateway, gateway.Config) {
	t.Helper()
	ts := servicetest.StartTenants(t, tenants...)
	cfg := gateway.DefaultConfig("127.0.0.1:0", ts.Node.ClientURL())
	cfg.Auth = true
	g, err := gateway.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g, cfg
}
