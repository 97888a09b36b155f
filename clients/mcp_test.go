package clients

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The MCP TypeScript SDK the server is tested with.
var mcpPackages = []string{"@modelcontextprotocol/sdk@1.32.2"}

// The MCP TypeScript SDK's own client starts `sessionlog mcp` over stdio
// on a data dir, as an agent host does: it lists the tools and the
// resource template, finds a message with search_sessions, reads the
// session with get_context, and is told, as a tool error, of a session
// that does not exist (clients/typescript/test-mcp/stdio.mjs).
func TestMCPTypeScriptClientOverStdio(t *testing.T) {
	app := clientApp(t, ".mcp-test", "MCP TypeScript SDK", mcpPackages...)
	goBin, err := exec.LookPath("go")
	if err != nil {
		skipPeer(t, "%s", "no go on PATH to build sessionlog: the MCP stdio test is not run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "sessionlog")
	if out, err := exec.CommandContext(ctx, goBin, "build", "-o", bin, "../cmd/sessionlog").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := t.TempDir()
	for _, args := range [][]string{{"new", "-id", "mcp1", "-name", "deploys"}, {"append", "mcp1", "-text", "the kestrel deploy failed on a missing migration"}} {
		if out, err := exec.CommandContext(ctx, bin, append(args, "-data", data)...).CombinedOutput(); err != nil {
			t.Fatalf("sessionlog %v: %v\n%s", args, err, out)
		}
	}
	node := testNode(t)
	a := newAppTest(t, app, node, "test-mcp/stdio.mjs")
	out, err := a.cmd(ctx, "stdio.mjs", bin, data, "mcp1", "kestrel").Output()
	if err != nil {
		t.Fatalf("stdio.mjs: %v\n%s", err, out)
	}
	var got struct {
		Server  map[string]string
		Tools   []string
		Hits    []map[string]any
		Context string
		Missing struct {
			IsError bool
			Text    string
		}
		Templates []string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &got); err != nil {
		t.Fatalf("stdio.mjs printed %q", out)
	}
	if got.Server["name"] != "sessionlog" || strings.Join(got.Tools, ",") != "get_context,get_entry,get_tree,list_sessions,search_sessions" {
		t.Errorf("server %v, tools %v", got.Server, got.Tools)
	}
	if len(got.Hits) != 1 || got.Hits[0]["session"] != "mcp1" {
		t.Errorf("search_sessions: %v", got.Hits)
	}
	if !strings.Contains(got.Context, "the kestrel deploy failed") {
		t.Errorf("get_context: %q", got.Context)
	}
	if !got.Missing.IsError || !strings.Contains(got.Missing.Text, `"nosuch"`) {
		t.Errorf("get_tree of a missing session: %+v", got.Missing)
	}
	if strings.Join(got.Templates, ",") != "sessionlog://sessions/{id}" {
		t.Errorf("resource templates: %v", got.Templates)
	}
}
