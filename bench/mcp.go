package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
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
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, pipeTransport(sctx, srv.Run), nil)
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
		// The floor under a tool: the service's operation, and a call of a
		// tool that does nothing but return the same reply (one call's,
		// kept), through the same SDK on the same kind of transport (a
		// pipe; the SDK's stateless HTTP handler, without the gateway):
		// what carrying the reply costs the SDK on both ends.
		for _, t := range []struct {
			tool string
			args func(int) map[string]any
			ours latencies
			base latencies
		}{{"search_sessions", searchArgs, s, baseSearch}, {"get_context", contextArgs, c, baseContext}} {
			reply, err := via.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.args(0)})
			if err != nil {
				return err
			}
			same, err := replayCalls(ctx, via.name, reply, cfg.MCPOps)
			if err != nil {
				return err
			}
			r.add(Row{Group: group, Name: t.tool + " p50 over " + via.name + ", against its floor", Ours: millis(t.ours.pct(50)), Base: millis(t.base.pct(50) + same.pct(50)), Unit: "ms",
				BaseName: fmt.Sprintf("the service's operation + a tool giving back the same reply over the same transport (%.2f ms), same run", millis(same.pct(50)))})
		}
	}
	return nil
}

// replayCalls times n calls, one at a time, of a tool that does nothing
// but return reply, on a server of its own, over a pipe (via starting
// "stdio") or HTTP.
func replayCalls(ctx context.Context, via string, reply *mcp.CallToolResult, n int) (latencies, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "replay", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "replay", InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return reply, nil
	})
	var transport mcp.Transport
	if strings.HasPrefix(via, "stdio") {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		transport = pipeTransport(sctx, srv.Run)
	} else {
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
		defer hs.Close()
		transport = &mcp.StreamableClientTransport{Endpoint: hs.URL}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var l latencies
	for range n {
		t0 := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "replay", Arguments: map[string]any{}}); err != nil {
			return nil, err
		}
		l = append(l, time.Since(t0))
	}
	return l, nil
}

// pipeTransport runs a server on one end of in-process pipes (stdio
// without a process boundary) until ctx ends, and returns the client's
// end.
func pipeTransport(ctx context.Context, run func(context.Context, mcp.Transport) error) mcp.Transport {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go run(ctx, &mcp.IOTransport{Reader: inR, Writer: outW})
	return &mcp.IOTransport{Reader: outR, Writer: inW}
}
