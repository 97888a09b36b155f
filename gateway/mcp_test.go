package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/internal/await"
)

// basicAuth sends credentials with every request of an MCP client.
type basicAuth struct{ user, password string }

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.user != "" {
		r.SetBasicAuth(b.user, b.password)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient connects the Go SDK's client to the gateway's /mcp (streamable
// HTTP) with credentials.
func mcpClient(t *testing.T, url, user, password string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: basicAuth{user, password}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The gateway's /mcp is behind its credentials, and each caller's tools
// reach its own tenant's sessions: neither tenant lists, finds or reads
// the other's.
func TestMCPOverHTTPKeepsTenantsApart(t *testing.T) {
	g := twoTenants(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"plan","name":"bob's plan"}`, "bob", "bob-pw"); r.status != 200 {
		t.Fatalf("bob creates: %d %v", r.status, r.body)
	}
	if r := do(t, "POST", u+"/plan/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"the zeppelin launch code"}}]}`, "bob", "bob-pw"); r.status != 200 {
		t.Fatalf("bob appends: %d %v", r.status, r.body)
	}
	if _, err := mcpClient(t, g.URL(), "", ""); err == nil {
		t.Fatal("an MCP client without credentials connected")
	}
	if _, err := mcpClient(t, g.URL(), "alice", "bob-pw"); err == nil {
		t.Fatal("an MCP client with a wrong password connected")
	}
	bob, err := mcpClient(t, g.URL(), "bob", "bob-pw")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := mcpClient(t, g.URL(), "alice", "alice-pw")
	if err != nil {
		t.Fatal(err)
	}
	callTool := func(cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return toolText(res), res.IsError
	}
	// Bob finds his message once the index has it.
	err = await.Until(ctx, await.Poll{First: 20 * time.Millisecond, Most: 300 * time.Millisecond}, nil, func() (bool, error) {
		text, isErr := callTool(bob, "search_sessions", map[string]any{"query": "zeppelin"})
		return !isErr && strings.Contains(text, "session plan"), nil
	})
	if err != nil {
		t.Fatalf("bob's search never found his message: %v", err)
	}
	if text, isErr := callTool(bob, "get_context", map[string]any{"session": "plan"}); isErr || !strings.Contains(text, "zeppelin") {
		t.Fatalf("bob's context: %v %s", isErr, text)
	}
	// Alice sees none of it.
	if text, _ := callTool(alice, "search_sessions", map[string]any{"query": "zeppelin"}); strings.Contains(text, "plan") {
		t.Fatalf("alice found bob's session: %s", text)
	}
	if text, _ := callTool(alice, "list_sessions", nil); strings.Contains(text, "plan") {
		t.Fatalf("alice lists bob's session: %s", text)
	}
	for _, tool := range []string{"get_context", "get_tree"} {
		if text, isErr := callTool(alice, tool, map[string]any{"session": "plan"}); !isErr || strings.Contains(text, "zeppelin") || !strings.Contains(text, "no such session") {
			t.Fatalf("alice's %s of bob's session: %v %s", tool, isErr, text)
		}
	}
	// Read-only by default: no tool writes.
	tools, err := bob.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if !tl.Annotations.ReadOnlyHint {
			t.Errorf("/mcp offers %s, which writes", tl.Name)
		}
	}
}

// /mcp bounds what a caller sends as the other routes do: a body over
// MaxBodyBytes is refused, and the gateway serves on.
func TestMCPOverHTTPBoundsBodies(t *testing.T) {
	g := twoTenants(t)
	huge := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{"name":"` + strings.Repeat("x", 2<<20) + `"}}}`
	req, err := http.NewRequest("POST", g.URL()+"/mcp", strings.NewReader(huge))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("alice", "alice-pw")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode < 400 {
		t.Fatalf("a 2 MiB MCP request: %d", res.StatusCode)
	}
	if _, err := mcpClient(t, g.URL(), "alice", "alice-pw"); err != nil {
		t.Fatalf("after a refused body: %v", err)
	}
}

// /mcp refuses what the stdio server refuses, the same way: a call whose
// arguments name a member twice (last would win in the SDK; the service
// refuses such bodies) or nest past the bound is a JSON-RPC error with
// its id, not a call.
func TestMCPOverHTTPRefusesWhatStdioRefuses(t *testing.T) {
	g := twoTenants(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_sessions","arguments":{"name":"a","name":"b"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_sessions","arguments":{"metadata":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}}`,
	} {
		req, _ := http.NewRequest("POST", g.URL()+"/mcp", strings.NewReader(body))
		req.SetBasicAuth("alice", "alice-pw")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			ID    any
			Error struct{ Code int }
		}
		json.NewDecoder(res.Body).Decode(&reply)
		res.Body.Close()
		if res.StatusCode != 400 || reply.Error.Code != -32600 || reply.ID != 7.0 {
			t.Fatalf("%.60s…: %d %+v", body, res.StatusCode, reply)
		}
	}
}

// A caller's MCP server is made once and kept for its connection, and
// holds no session after each stateless call: many calls grow nothing.
func TestMCPOverHTTPKeepsOneServerACaller(t *testing.T) {
	g := twoTenants(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcpClient(t, g.URL(), "bob", "bob-pw")
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("list_sessions: %v %s", err, toolText(res))
		}
	}
	servers, sessions := gateway.MCPServers(g)
	if servers != 1 || sessions != 0 {
		t.Fatalf("after 50 calls of one caller: %d servers holding %d sessions, want 1 holding none", servers, sessions)
	}
}
