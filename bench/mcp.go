package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/mcpserver"
)

// mcpPart times search_sessions and get_context round trips of the MCP
// server, over the stdio transport (in process, through a pipe) and over
// the gateway's /mcp (streamable HTTP), against the same operations asked
// of the service directly (the Go client over NATS), in the same run:
// MCPOps calls of each, one at a time, on MCPSessions sessions of 40
// messages.
func mcpPart(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	n, scfg, gw, stop, err := startGateway(ctx, filepath.Join(dir, "mcp"), withSearch)
	if err != nil {
		return err
	}
	defer stop()
	svc := api.NewClient(n.nc, scfg.Subject)
	p.say("mcp: %d sessions of 40 messages", cfg.MCPSessions)
	words := []string{"kestrel", "deploy", "migration", "flaky", "clock", "timeout", "retry", "cache", "index", "lock"}
	for i := range cfg.MCPSessions {
		id := fmt.Sprintf("m%04d", i)
		if err := svc.Call(ctx, api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			return err
		}
		req := api.AppendRequest{Session: id}
		for k := range 40 {
			text := fmt.Sprintf("%s %s %s step %d of session %d", words[(i+k)%10], words[(i*3+k)%10], strings.Repeat("detail ", 20), k, i)
			req.Entries = append(req.Entries, jsontext.Value(fmt.Sprintf(`{"type":"message","message":{"role":"user","content":%q,"timestamp":1}}`, text)))
		}
		if err := svc.Call(ctx, api.OpAppend, req, nil); err != nil {
			return err
		}
	}
	// The index follows the stream: wait until the last session is found.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var res api.SearchReply
		err := svc.Call(ctx, api.OpSearch, api.SearchRequest{Query: "session", Session: fmt.Sprintf("m%04d", cfg.MCPSessions-1)}, &res)
		if err == nil && len(res.Hits) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mcp: the index did not catch up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	search := func(i int) (string, any) {
		return api.OpSearch, api.SearchRequest{Query: words[i%10] + " detail", Limit: 20}
	}
	ctxReq := func(i int) (string, any) {
		return api.OpContext, api.ContextRequest{Session: fmt.Sprintf("m%04d", i%cfg.MCPSessions)}
	}
	direct := func(build func(int) (string, any)) (latencies, error) {
		var l latencies
		for i := range cfg.MCPOps {
			op, req := build(i)
			t0 := time.Now()
			if err := svc.Call(ctx, op, req, &jsontext.Value{}); err != nil {
				return nil, err
			}
			l = append(l, time.Since(t0))
		}
		return l, nil
	}
	tool := func(cs *mcp.ClientSession, name string, args func(int) map[string]any) (latencies, error) {
		var l latencies
		for i := range cfg.MCPOps {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args(i)})
			if err != nil {
				return nil, err
			}
			if res.IsError {
				return nil, fmt.Errorf("mcp: %s: %v", name, res.Content)
			}
			l = append(l, time.Since(t0))
		}
		return l, nil
	}
	searchArgs := func(i int) map[string]any { return map[string]any{"query": words[i%10] + " detail"} }
	contextArgs := func(i int) map[string]any {
		return map[string]any{"session": fmt.Sprintf("m%04d", i%cfg.MCPSessions), "max_tokens": 100000}
	}
	baseSearch, err := direct(search)
	if err != nil {
		return err
	}
	baseContext, err := direct(ctxReq)
	if err != nil {
		return err
	}
	// Over stdio: the server and the client on the two ends of pipes.
	srv, err := mcpserver.New(mcpserver.DefaultConfig(), svc)
	if err != nil {
		return err
	}
	defer srv.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(sctx, &mcp.IOTransport{Reader: inR, Writer: outW})
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		return err
	}
	defer stdio.Close()
	httpc, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL() + "/mcp"}, nil)
	if err != nil {
		return err
	}
	defer httpc.Close()
	group := fmt.Sprintf("MCP tools, one call at a time (%d each, %d sessions of 40 messages)", cfg.MCPOps, cfg.MCPSessions)
	for _, via := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"stdio (a pipe)", stdio}, {"HTTP (the gateway's /mcp)", httpc}} {
		p.say("mcp: over %s", via.name)
		s, err := tool(via.cs, "search_sessions", searchArgs)
		if err != nil {
			return err
		}
		c, err := tool(via.cs, "get_context", contextArgs)
		if err != nil {
			return err
		}
		base := "the service's operation, Go client over NATS, same run"
		r.add(Row{Group: group, Name: "search_sessions p50 over " + via.name, Ours: millis(s.pct(50)), Base: millis(baseSearch.pct(50)), Unit: "ms", BaseName: base, Goal: "≤ 1.3x", Met: s.pct(50) <= baseSearch.pct(50)*13/10})
		r.add(Row{Group: group, Name: "get_context p50 over " + via.name, Ours: millis(c.pct(50)), Base: millis(baseContext.pct(50)), Unit: "ms", BaseName: base, Goal: "≤ 1.3x", Met: c.pct(50) <= baseContext.pct(50)*13/10})
	}
	return nil
}
