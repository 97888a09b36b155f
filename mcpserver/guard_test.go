package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/mcpserver"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// Every malformed line a host can send over stdio is answered with a
// JSON-RPC error, and the server goes on: the request after it is
// answered. Before, each of these ended `sessionlog mcp`.
func TestStdioAnswersMalformedLinesAndGoesOn(t *testing.T) {
	ts := servicetest.StartTenants(t, cluster.Tenant{Name: "mcp", Users: []cluster.User{{Name: "agent", Password: "agent-pw"}}})
	nc, err := ts.Node.ConnectTenant("mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv, err := mcpserver.New(mcpserver.DefaultConfig(), api.NewClient(nc, "sessionlog.v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &mcpserver.StdioTransport{In: inR, Out: outW}) }()
	replies := bufio.NewReaderSize(outR, 1<<20)
	send := func(line string) {
		t.Helper()
		go inW.Write([]byte(line + "\n"))
	}
	reply := func() map[string]any {
		t.Helper()
		type res struct {
			m   map[string]any
			err error
		}
		ch := make(chan res, 1)
		go func() {
			line, err := replies.ReadBytes('\n')
			var m map[string]any
			if err == nil {
				err = json.Unmarshal(line, &m)
			}
			ch <- res{m, err}
		}()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.m
		case err := <-done:
			t.Fatalf("the server stopped: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("no reply")
		}
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	reply()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	huge := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", mcpserver.MaxMessageBytes) + `"}}`
	for i, c := range []struct {
		line string
		code float64
		id   any
	}{
		{"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\x00\"}", -32700, nil},
		{"garbage", -32700, nil},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, -32600, 4.0},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_tree","name":"list_sessions"}}`, -32600, 5.0},
		{`{"foo":1,"id":6}`, -32600, 6.0},
		{"[]", -32600, nil},
		{huge, -32700, nil},
	} {
		send(c.line)
		r := reply()
		e, _ := r["error"].(map[string]any)
		if e == nil || e["code"] != c.code || r["id"] != c.id {
			t.Fatalf("line %d (%.40q): reply %v, want error %v with id %v", i, c.line, r, c.code, c.id)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 100+i))
		if r := reply(); r["id"] != float64(100+i) || r["result"] == nil {
			t.Fatalf("after line %d the next request: %v", i, r)
		}
	}
}
