package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// Through the gateway, a tenant's HTTP credentials reach only that
// tenant's sessions: the gateway connects to NATS as the caller.
func TestGatewayTenants(t *testing.T) {
	g := twoTenants(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := g.URL() + "/v1/sessions"
	alice, bob := []string{"alice", "alice-pw"}, []string{"bob", "bob-pw"}

	if r := do(t, "POST", u, `{"id":"plan"}`, bob...); r.status != 200 {
		t.Fatalf("bob creates: %d %v", r.status, r.body)
	}
	r := do(t, "POST", u+"/plan/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"secret"}}]}`, bob...)
	if r.status != 200 {
		t.Fatalf("bob appends: %d %v", r.status, r.body)
	}
	secret := r.body["entries"].([]any)[0].(map[string]any)["id"].(string)
	if r := do(t, "GET", u+"/plan/entries/"+secret, "", bob...); r.status != 200 || r.body["entry"].(map[string]any)["id"] != secret {
		t.Fatalf("bob gets his entry: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"/plan/entries/"+secret, "", alice...); r.status != 404 {
		t.Fatalf("alice gets bob's entry: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"/plan/entries/nosuch", "", bob...); r.status != 404 || r.body["error"].(map[string]any)["code"] != "entry_not_found" {
		t.Fatalf("a missing entry: %d %v", r.status, r.body)
	}
	for _, c := range []struct {
		name   string
		method string
		path   string
		body   string
		auth   []string
		want   int
	}{
		{"no credentials", "GET", "", "", nil, 401},
		{"wrong password", "GET", "", "", []string{"alice", "bob-pw"}, 401},
		{"unknown user", "GET", "", "", []string{"mallory", "x"}, 401},
		{"alice opens bob's session", "GET", "/plan", "", alice, 404},
		{"alice reads bob's context", "GET", "/plan/context", "", alice, 404},
		{"alice appends to bob's session", "POST", "/plan/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"x"}}]}`, alice, 404},
		{"alice deletes bob's session", "DELETE", "/plan", "", alice, 404},
		{"alice forks bob's session", "POST", "/plan/fork", `{"id":"stolen"}`, alice, 404},
		{"bob still reads it", "GET", "/plan/tree", "", bob, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, u+c.path, c.body, c.auth...)
			if r.status != c.want {
				t.Fatalf("%d %v, want %d", r.status, r.body, c.want)
			}
			if c.want == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
	if r := do(t, "GET", u, "", alice...); r.status != 200 || len(r.body["sessions"].([]any)) != 0 {
		t.Fatalf("alice's list: %d %v", r.status, r.body)
	}
	// The console's page is behind the same credentials (the browser asks
	// for them once, then its API calls carry them).
	for _, c := range []struct {
		auth []string
		want int
	}{{nil, 401}, {[]string{"alice", "bob-pw"}, 401}, {alice, 200}} {
		req, _ := http.NewRequest("GET", g.URL()+"/console/", nil)
		if c.auth != nil {
			req.SetBasicAuth(c.auth[0], c.auth[1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Fatalf("console page with %v: %d, want %d", c.auth, res.StatusCode, c.want)
		}
	}
	res := openEvents(t, ctx, u+"/plan/events?after=0", "", alice...)
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Fatalf("alice follows bob's events: %d", res.StatusCode)
	}
	res = openEvents(t, ctx, u+"/plan/events?after=0", "", bob...)
	defer res.Body.Close()
	if evs := readEvents(t, res.Body, 2); evs[0].kind != "header" || evs[1].kind != "entry" {
		t.Fatalf("bob's events: %+v", evs)
	}
}

// twoTenants starts a node with tenants acme (user alice) and globex (user
// bob), their services, and a gateway asking for credentials.
func twoTenants(t *testing.T) *gateway.Gateway {
	t.Helper()
	ts := servicetest.StartTenants(t,
		cluster.Tenant{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}}},
		cluster.Tenant{Name: "globex", Users: []cluster.User{{Name: "bob", Password: "bob-pw"}}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := gateway.DefaultConfig("127.0.0.1:0", ts.Node.ClientURL())
	cfg.Auth = true
	g, err := gateway.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}
