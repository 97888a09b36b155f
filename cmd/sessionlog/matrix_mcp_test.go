package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// toolText is the text of a tool's answer.
func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// mcpStdio runs sessionlog mcp on data and connects the SDK's client to
// it over stdio; stop cancels the run and says how it ended.
func mcpStdio(t *testing.T, data string) (cs *mcp.ClientSession, stop func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr clustertest.SyncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- Run(ctx, []string{"mcp", "-data", data}, inR, outW, &stderr)
		outW.Close()
	}()
	stop = func() (int, string) {
		cancel()
		inW.Close()
		select {
		case code := <-exited:
			return code, stderr.String()
		case <-time.After(30 * time.Second):
			t.Fatal("mcp did not stop when told")
			return 0, ""
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		stop()
		t.Fatalf("connect: %v (%s)", err, stderr.String())
	}
	return cs, stop
}

// mcpOverStdio reads every source with every reading tool of sessionlog
// mcp on the data dir, over stdio.
func mcpOverStdio(t *testing.T, data string, sources []matrixSource, done *pairs) {
	cs, stop := mcpStdio(t, data)
	defer stop()
	defer cs.Close()
	readWithTools(t, cs, "mcp stdio", sources, done)
}

// servedHTTP runs serve on data with its HTTP gateway until the test
// ends, and returns the gateway's URL.
func servedHTTP(t *testing.T, data string) string {
	t.Helper()
	stdout, _ := serveFor(t, data, "-http", "127.0.0.1:0")
	var url string
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		_, u, ok := strings.Cut(stdout.String(), "HTTP ")
		if !ok {
			return io.ErrUnexpectedEOF
		}
		url, _, _ = strings.Cut(strings.Fields(u)[0], ";")
		return nil
	})
	return url
}

// mcpOverHTTP does the same through the gateway's /mcp.
func mcpOverHTTP(t *testing.T, url string, sources []matrixSource, done *pairs) {
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to %s/mcp: %v", url, err)
	}
	defer cs.Close()
	readWithTools(t, cs, "mcp http", sources, done)
}

// readWithTools pages through list_sessions, filtered and not, and reads
// every source with get_tree, get_context, get_entry and search_sessions.
func readWithTools(t *testing.T, cs *mcp.ClientSession, via string, sources []matrixSource, done *pairs) {
	t.Helper()
	ctx := context.Background()
	call := func(name string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %s %v: %v", via, name, args, err)
		}
		if res.IsError {
			t.Fatalf("%s %s %v answered an error: %s", via, name, args, toolText(res))
		}
		return res, toolText(res)
	}
	// Pages of three, so every session shares a page with others.
	listed := map[string]string{} // id → leaf
	for _, filter := range []map[string]any{{}, {"metadata": map[string]string{"source": "claude-code"}}} {
		args := map[string]any{"limit": 3}
		for k, v := range filter {
			args[k] = v
		}
		for page := 0; ; page++ {
			res, _ := call("list_sessions", args)
			var out struct {
				Sessions []struct {
					ID   string `json:"id"`
					Leaf string `json:"leaf"`
				} `json:"sessions"`
				Next string `json:"next"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("list_sessions: %v: %s", err, b)
			}
			for _, s := range out.Sessions {
				listed[s.ID] = s.Leaf
			}
			if out.Next == "" || page > 100 {
				break
			}
			args["cursor"] = out.Next
		}
	}
	for _, s := range sources {
		leaf, ok := listed[s.id]
		if !ok {
			t.Errorf("%s list_sessions never listed %s", via, s.id)
		}
		done.done(via+" list_sessions", s.id)
		_, tree := call("get_tree", map[string]any{"session": s.id})
		if len(tree) > 12_000 || !strings.Contains(tree, s.id) {
			t.Errorf("%s get_tree of %s: %d characters: %.300s", via, s.id, len(tree), tree)
		}
		terminalSafe(t, via+" get_tree", tree)
		done.done(via+" get_tree", s.id)
		_, c := call("get_context", map[string]any{"session": s.id, "max_tokens": 4000})
		terminalSafe(t, via+" get_context", c)
		done.done(via+" get_context", s.id)
		if leaf != "" {
			if _, e := call("get_entry", map[string]any{"session": s.id, "entry": leaf}); !strings.Contains(e, leaf) {
				t.Errorf("%s get_entry %s of %s: %.300s", via, leaf, s.id, e)
			}
		}
		done.done(via+" get_entry", s.id)
	}
	// search_sessions finds the Agents SDK session's words.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := await.Until(wctx, await.Poll{First: 20 * time.Millisecond, Most: 300 * time.Millisecond}, nil, func() (bool, error) {
		_, out := call("search_sessions", map[string]any{"query": "echidna"})
		return strings.Contains(out, "matrix-openai"), nil
	})
	if err != nil {
		t.Errorf("%s search_sessions never found the Agents SDK session", via)
	}
	for _, s := range sources {
		call("search_sessions", map[string]any{"query": "the", "session": s.id, "limit": 3})
		done.done(via+" search_sessions", s.id)
	}
}
