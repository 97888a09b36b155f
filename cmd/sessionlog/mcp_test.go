package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/internal/await"
)

// sessionlog mcp on the embedded node, over stdio, with the Go SDK's
// client: it runs a service of its own with the data dir's index, lists
// its tools, finds and reads what the CLI stored, and stops when told.
func TestMCPVerbOverStdio(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "m1", "-name", "clock work")
	mustRun(t, data, "", "append", "m1", "-text", "why does the heliotrope job fail at midnight")
	ctx := context.Background()
	cs, stop := mcpStdio(t, data)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 5 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_context", Arguments: map[string]any{"session": "m1"}})
	if err != nil || res.IsError || !strings.Contains(toolText(res), "heliotrope job fail") {
		t.Fatalf("get_context: %v %+v %s", err, res, toolText(res))
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	err = await.Until(wctx, await.Poll{First: 20 * time.Millisecond, Most: 300 * time.Millisecond}, nil, func() (bool, error) {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_sessions", Arguments: map[string]any{"query": "midnight"}})
		return err == nil && !res.IsError && strings.Contains(toolText(res), "session m1"), err
	})
	if err != nil {
		t.Fatalf("search_sessions never found the message: %v", err)
	}
	cs.Close()
	if code, stderr := stop(); code != 0 {
		t.Fatalf("mcp exited %d: %s", code, stderr)
	}
}

// mcp refuses what it cannot serve, saying so, before it starts.
func TestMCPVerbRefusesBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mcp", "-max-tokens", "5"}, 2, "MaxTokens"},
		{[]string{"mcp", "extra"}, 2, "no arguments"},
		{[]string{"mcp", "-files", t.TempDir()}, 2, "not -files"},
	} {
		code, _, stderr := runIn(t, t.TempDir(), "", tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
