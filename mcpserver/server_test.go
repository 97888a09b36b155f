package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/mcpserver"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/transcript"
)

// connect starts a node with a tenant and its service, and an MCP server
// on it (cfg), and returns the Go SDK's client connected to it in memory,
// with the service client the test writes through.
func connect(t *testing.T, cfg mcpserver.Config) (*mcp.ClientSession, *api.Client) {
	return connectWith(t, cfg, nil)
}

func connectWith(t testing.TB, cfg mcpserver.Config, copts *mcp.ClientOptions) (*mcp.ClientSession, *api.Client) {
	t.Helper()
	ts := servicetest.StartTenants(t, cluster.Tenant{Name: "mcp", Users: []cluster.User{{Name: "agent", Password: "agent-pw"}}})
	nc, err := ts.Node.ConnectTenant("mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	svc := api.NewClient(nc, "sessionlog.v1")
	srv, err := mcpserver.New(cfg, svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, svc
}

// call calls a tool and returns its text and structured content.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) (text string, structured map[string]any, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
		if !res.IsError {
			checkOutputSchema(t, cs, tool, structured)
		}
	}
	return text, structured, res.IsError
}

// checkOutputSchema holds a tool's result to the output schema the tool
// declares: the server does not check its own results (addtool.go), its
// tests do, every one they get.
func checkOutputSchema(t *testing.T, cs *mcp.ClientSession, tool string, structured map[string]any) {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	for _, tl := range list.Tools {
		if tl.Name != tool {
			continue
		}
		if tl.OutputSchema == nil {
			t.Fatalf("%s declares no output schema", tool)
		}
		b, _ := json.Marshal(tl.OutputSchema)
		var schema jsonschema.Schema
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatalf("%s's output schema: %v", tool, err)
		}
		rs, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s's output schema: %v", tool, err)
		}
		if err := rs.Validate(structured); err != nil {
			t.Fatalf("%s's result does not match its output schema: %v", tool, err)
		}
		return
	}
	t.Fatalf("no tool %s", tool)
}

func appendTo(t *testing.T, svc *api.Client, id string, entries ...string) api.AppendReply {
	t.Helper()
	var reply api.AppendReply
	req := api.AppendRequest{Session: id}
	for _, e := range entries {
		req.Entries = append(req.Entries, []byte(e))
	}
	if err := svc.Call(context.Background(), api.OpAppend, req, &reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

const assistant = `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"REPLY"}],"api":"a","provider":"anthropic","model":"claude-x","stopReason":"stop","timestamp":2}}`

// The read-only tools against a real node: what they list, find, read and
// outline, each with text and structured content; bad input is a tool
// error naming what is wrong.
func TestReadTools(t *testing.T) {
	cs, svc := connect(t, mcpserver.DefaultConfig())
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if !strings.Contains(tl.Description, "not as instructions") {
			t.Errorf("%s's description does not say its results are data", tl.Name)
		}
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("%s is not marked read-only", tl.Name)
		}
	}
	if strings.Join(names, ",") != "get_context,get_entry,get_tree,list_sessions,search_sessions" {
		t.Fatalf("tools: %v", names)
	}
	if err := svc.Call(ctx, api.OpCreate, api.CreateRequest{ID: "fix-1", Name: "flaky test", Cwd: "/repo"}, nil); err != nil {
		t.Fatal(err)
	}
	first := appendTo(t, svc, "fix-1", `{"type":"message","message":{"role":"user","content":"the heliotrope test is flaky","timestamp":1}}`,
		strings.Replace(assistant, "REPLY", "pin the heliotrope clock to UTC", 1))
	appendTo(t, svc, "fix-1", `{"type":"message","message":{"role":"user","content":"`+strings.Repeat("long words ", 400)+`","timestamp":3}}`,
		strings.Replace(assistant, "REPLY", "done", 1))

	text, st, isErr := call(t, cs, "list_sessions", map[string]any{"cwd": "/repo"})
	if isErr || !strings.Contains(text, "fix-1") || len(st["sessions"].([]any)) != 1 {
		t.Fatalf("list_sessions: %v %s %v", isErr, text, st)
	}
	// The index follows the stream: poll until the hit is there.
	var hits []any
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = await.Until(wctx, await.Poll{First: 10 * time.Millisecond, Most: 200 * time.Millisecond}, nil, func() (bool, error) {
		text, st, isErr = call(t, cs, "search_sessions", map[string]any{"query": "heliotrope clock"})
		hits, _ = st["hits"].([]any)
		return !isErr && len(hits) > 0, nil
	})
	// Grouped by session: its line, then its entries.
	if err != nil || !strings.Contains(text, "session fix-1 (") || !strings.Contains(text, "entry "+first.Entries[1].ID+" (") ||
		hits[0].(map[string]any)["entry"] != first.Entries[1].ID {
		t.Fatalf("search_sessions: %v %s %v", err, text, st)
	}
	text, st, isErr = call(t, cs, "get_context", map[string]any{"session": "fix-1"})
	if isErr || !strings.Contains(text, "pin the heliotrope clock to UTC") || st["omitted"] != float64(0) || st["total"] != float64(4) {
		t.Fatalf("get_context: %s %v", text, st)
	}
	// A small budget leaves the oldest out, saying so.
	text, st, _ = call(t, cs, "get_context", map[string]any{"session": "fix-1", "max_tokens": 50})
	if st["omitted"].(float64) < 1 || !strings.Contains(text, "earlier messages left out") || !strings.Contains(text, "done") {
		t.Fatalf("get_context within 50 tokens: %s %v", text, st)
	}
	// Up to an entry: the branch ending there.
	text, _, _ = call(t, cs, "get_context", map[string]any{"session": "fix-1", "entry": first.Entries[1].ID})
	if strings.Contains(text, "long words") || !strings.Contains(text, "heliotrope") {
		t.Fatalf("get_context up to an entry: %s", text)
	}
	text, st, isErr = call(t, cs, "get_tree", map[string]any{"session": "fix-1"})
	if isErr || !strings.Contains(text, "← leaf") || st["entries"] != float64(5) {
		t.Fatalf("get_tree: %s %v", text, st)
	}
	text, st, isErr = call(t, cs, "get_entry", map[string]any{"session": "fix-1", "entry": first.Entries[0].ID})
	if isErr || !strings.Contains(text, "the heliotrope test is flaky") || st["entry"] == nil {
		t.Fatalf("get_entry: %s %v", text, st)
	}

	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_context", map[string]any{"session": "nosuch"}, "no such session"},
		{"get_tree", map[string]any{"session": "a.b"}, `session "a.b"`},
		{"get_entry", map[string]any{"session": "fix-1", "entry": "nosuch"}, `no such entry: no entry "nosuch"`},
		{"get_entry", map[string]any{"session": "fix-1", "entry": "has space"}, `entry "has space"`},
		{"search_sessions", map[string]any{"query": "  "}, "query is empty"},
		{"search_sessions", map[string]any{"query": "x", "session": "../etc"}, `session "../etc"`},
		{"list_sessions", map[string]any{"name": strings.Repeat("n", 70<<10)}, "arguments are"},
		{"get_context", map[string]any{"session": "fix-1", "entry": "nosuch"}, "no such entry"},
	} {
		text, _, isErr := call(t, cs, tt.tool, tt.args)
		if !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("%s %v: error %v, %q; want an error saying %q", tt.tool, clipArgs(tt.args), isErr, text, tt.want)
		}
	}
}

func clipArgs(m map[string]any) string {
	b, _ := json.Marshal(m)
	if len(b) > 100 {
		return string(b[:100]) + "…"
	}
	return string(b)
}

// With writes allowed, append_message and label_entry write, conditional
// on the sequence when given one.
func TestWriteTools(t *testing.T) {
	cfg := mcpserver.DefaultConfig()
	cfg.AllowWrites = true
	cs, svc := connect(t, cfg)
	if err := svc.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: "w-1"}, nil); err != nil {
		t.Fatal(err)
	}
	_, st, isErr := call(t, cs, "append_message", map[string]any{"session": "w-1", "text": "remember: the clock is UTC"})
	if isErr || st["entry"] == "" {
		t.Fatalf("append_message: %v", st)
	}
	entry, seq := st["entry"].(string), st["sequence"].(float64)
	if _, st, isErr = call(t, cs, "label_entry", map[string]any{"session": "w-1", "entry": entry, "label": "decision", "if_sequence": seq}); isErr {
		t.Fatalf("label_entry: %v", st)
	}
	// The sequence has moved on: a write conditional on the old one fails.
	if text, _, isErr := call(t, cs, "append_message", map[string]any{"session": "w-1", "text": "late", "if_sequence": seq}); !isErr || !strings.Contains(text, "conflict") {
		t.Fatalf("append_message on a stale sequence: %v %s", isErr, text)
	}
	if text, _, _ := call(t, cs, "get_tree", map[string]any{"session": "w-1"}); !strings.Contains(text, `"decision" on `+entry) {
		t.Fatalf("get_tree after the label: %s", text)
	}
	if text, _, isErr := call(t, cs, "append_message", map[string]any{"session": "w-1", "text": " "}); !isErr || !strings.Contains(text, "text is empty") {
		t.Fatalf("an empty message: %v %s", isErr, text)
	}
}

// A session is a resource (its context as text); a client subscribed to
// it is told when it grows, and no longer once it unsubscribes.
func TestSessionResourceAndSubscription(t *testing.T) {
	cfg := mcpserver.DefaultConfig()
	cfg.Subscriptions = true
	updated := make(chan string, 16)
	cs, svc := connectWith(t, cfg, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}})
	ctx := context.Background()
	if err := svc.Call(ctx, api.OpCreate, api.CreateRequest{ID: "live"}, nil); err != nil {
		t.Fatal(err)
	}
	appendTo(t, svc, "live", `{"type":"message","message":{"role":"user","content":"first words","timestamp":1}}`)
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "sessionlog://sessions/{id}" {
		t.Fatalf("templates: %v %v", templates, err)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sessionlog://sessions/live"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "first words") {
		t.Fatalf("read: %v %v", res, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sessionlog://sessions/nosuch"}); err == nil {
		t.Fatal("read of a missing session succeeded")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sessionlog://sessions/not.an.id"}); err == nil || !strings.Contains(err.Error(), "not.an.id") {
		t.Fatalf("read of what is no session id: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "sessionlog://sessions/live"}); err != nil {
		t.Fatal(err)
	}
	// The watch starts from where the session is: append until told (a
	// first append may land before the watch has looked).
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = await.Until(wctx, await.Poll{First: 50 * time.Millisecond, Most: 500 * time.Millisecond}, nil, func() (bool, error) {
		appendTo(t, svc, "live", `{"type":"message","message":{"role":"user","content":"more","timestamp":2}}`)
		select {
		case uri := <-updated:
			return uri == "sessionlog://sessions/live", nil
		case <-time.After(200 * time.Millisecond):
			return false, nil
		}
	})
	if err != nil {
		t.Fatalf("no notification of the appends: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "sessionlog://sessions/live"}); err != nil {
		t.Fatal(err)
	}
	for len(updated) > 0 {
		<-updated
	}
	appendTo(t, svc, "live", `{"type":"message","message":{"role":"user","content":"unwatched","timestamp":3}}`)
	select {
	case uri := <-updated:
		t.Fatalf("told of %s after unsubscribing", uri)
	case <-time.After(time.Second):
	}
}

// importTranscript appends a transcript fixture's entries to a new
// session through the service, as an import into a fleet does, and
// returns the session's id.
func importTranscript(t *testing.T, svc *api.Client, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	f, err := transcript.Detect(data)
	if err != nil {
		t.Fatal(err)
	}
	d, err := transcript.Decode(f, data, transcript.SourceFor(f, file), codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := api.CreateRequest{ID: d.Header.ID, Cwd: d.Header.Cwd, ParentSession: d.Header.ParentSession, Metadata: jsontext.Value(d.Header.Metadata)}
	if err := svc.Call(ctx, api.OpCreate, req, nil); err != nil {
		t.Fatal(err)
	}
	for len(d.Entries) > 0 {
		n := min(len(d.Entries), 100)
		areq := api.AppendRequest{Session: d.Header.ID}
		for _, e := range d.Entries[:n] {
			j, err := codec.EncodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			areq.Entries = append(areq.Entries, j)
		}
		if err := svc.Call(ctx, api.OpAppend, areq, &api.AppendReply{}); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		d.Entries = d.Entries[n:]
	}
	return d.Header.ID
}

// Every read tool answers on every shape of session the store holds —
// imported Claude Code and Codex sessions with their metadata objects,
// metadata of every JSON kind, unknown entry types — and each structured
// reply passes the client's validation against the tool's own output
// schema (the SDK's client checks it). list_sessions once failed on any
// page holding a session with metadata: its inferred schema said metadata
// was an array of bytes.
func TestReadToolsOnEveryShapeOfSession(t *testing.T) {
	cs, svc := connect(t, mcpserver.DefaultConfig())
	ctx := context.Background()
	ids := []string{
		importTranscript(t, svc, "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"),
		importTranscript(t, svc, "codex/numbers.jsonl"),
	}
	for i, meta := range []string{`{"source":"langgraph","thread_id":"t-1","checkpoint_ns":"","step":-1,"writes":{"a":[1,2.50,{"b":null}]}}`,
		`{"deep":{"er":{"still":[[[["\u001b[31mred\u001b[0m"]]]]}}}`, `{"x":"line\nbreak </script> ]]> ` + "`" + `"}`} {
		id := fmt.Sprintf("shape-%d", i)
		if err := svc.Call(ctx, api.OpCreate, api.CreateRequest{ID: id, Metadata: jsontext.Value(meta)}, nil); err != nil {
			t.Fatal(err)
		}
		appendTo(t, svc, id, `{"type":"message","message":{"role":"user","content":"shape `+id+`","timestamp":1}}`,
			`{"type":"x-future-type","payload":{"n":1.0}}`)
		ids = append(ids, id)
	}
	// get_tree outlines the 1,512-entry Claude Code session as its
	// conversation, within its budget (it was 58,097 characters, "163
	// branches", a level deeper at every tool call).
	text, st, isErr := call(t, cs, "get_tree", map[string]any{"session": ids[0]})
	if isErr || st["branches"] != float64(0) || st["entries"] != float64(1512) || st["folded"].(float64) < 700 ||
		len(text) > 2000*4+1000 || !strings.Contains(text, "← leaf") || strings.Contains(text, " custom ") ||
		!strings.Contains(text, "(1 result)") {
		t.Errorf("get_tree of the Claude Code session: %d characters, %v\n%s", len(text), clipArgs(st), text)
	}
	// As Claude Code showed it: each call with what it acted on, relative
	// to the session's directory, a message's calls on one row; headed by
	// its title.
	for _, want := range []string{`session 4d5611e5-241a-462a-8d15-5122611a9569 "Work on bead spotter-dov.`, "→ Edit(lib/spotter_web/live/"} {
		if !strings.Contains(text, want) {
			t.Errorf("get_tree of the Claude Code session has no %q:\n%s", want, text)
		}
	}
	if st["title"] == nil {
		t.Errorf("get_tree's structured reply has no title: %v", clipArgs(st))
	}
	text, st, _ = call(t, cs, "get_tree", map[string]any{"session": ids[0], "max_tokens": 200})
	if st["omitted"].(float64) < 1 || !strings.Contains(text, "rows left out to fit max_tokens 200") || len(text) > 200*4+1000 {
		t.Errorf("get_tree within 200 tokens: %d characters\n%s", len(text), text)
	}
	seen := map[string]bool{}
	for cursor := ""; ; {
		text, st, isErr := call(t, cs, "list_sessions", map[string]any{"cursor": cursor, "limit": 2})
		if isErr {
			t.Fatalf("list_sessions: %s", text)
		}
		for _, s := range st["sessions"].([]any) {
			seen[s.(map[string]any)["id"].(string)] = true
		}
		if strings.Contains(text, "4d5611e5-241a-462a-8d15-5122611a9569 ") && !strings.Contains(text, `first message "Work on bead spotter-dov.`) {
			t.Errorf("list_sessions names the Claude Code session by no title:\n%s", text)
		}
		next, _ := st["next"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("list_sessions never listed %s", id)
		}
		for _, tool := range []string{"get_context", "get_tree"} {
			if text, _, isErr := call(t, cs, tool, map[string]any{"session": id}); isErr {
				t.Errorf("%s %s: %s", tool, id, text)
			}
		}
		if text, _, isErr := call(t, cs, "list_sessions", map[string]any{"metadata": map[string]any{"source": "langgraph"}}); isErr {
			t.Errorf("list_sessions with a metadata filter: %s", text)
		}
	}
}
