package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

var (
	node *cluster.Node
	nc   *nats.Conn
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.RunWithNode("sessionlog-gateway-test-", nil, func(n *cluster.Node, c *nats.Conn) int {
		node, nc = n, c
		return m.Run()
	}))
}

// start runs a service of its own and a gateway in front of it.
func start(t *testing.T, tweak func(*gateway.Config)) *gateway.Gateway {
	t.Helper()
	return startOn(t, 1, tweak)
}

// startOn is start on a stream of that many partitions.
func startOn(t *testing.T, partitions int, tweak func(*gateway.Config)) *gateway.Gateway {
	t.Helper()
	g, _ := startWith(t, partitions, tweak)
	return g
}

// startWith is startOn that returns the backend too.
func startWith(t *testing.T, partitions int, tweak func(*gateway.Config)) (*gateway.Gateway, *stream.Backend) {
	t.Helper()
	b := servicetest.Partitioned(t, nc, partitions)
	_, svcCfg := servicetest.Start(t, nc, b, nil)
	cfg := gateway.DefaultConfig("127.0.0.1:0", node.ClientURL())
	cfg.Subject, cfg.Stream = svcCfg.Subject, b.Config()
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := gateway.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return g, b
}

type response struct {
	status int
	header http.Header
	body   map[string]any
}

func do(t *testing.T, method, url, body string, auth ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, url, raw, err)
	}
	return out
}

func errCode(r response) string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func errField(r response) string {
	e, _ := r.body["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

func TestRESTLifecycle(t *testing.T) { sessiontest.EachLayout(t, testRESTLifecycle) }

func testRESTLifecycle(t *testing.T, partitions int) {
	// Bodies over a request go as uploads, up to 1.5 MiB here.
	g := startOn(t, partitions, func(c *gateway.Config) { c.MaxUploadBytes = 3 << 19 })
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"h1","name":"over http"}`); r.status != 200 {
		t.Fatalf("create: %d %v", r.status, r.body)
	}
	r := do(t, "POST", u+"/h1/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"hi"}}]}`)
	if r.status != 200 {
		t.Fatalf("append: %d %v", r.status, r.body)
	}
	leaf, _ := r.body["leaf"].(string)
	seq1, _ := r.body["sequence"].(float64)
	if leaf == "" || seq1 == 0 {
		t.Fatalf("append reply %v", r.body)
	}
	if r := do(t, "GET", u+"/h1/context", ""); r.status != 200 || len(r.body["messages"].([]any)) != 1 {
		t.Fatalf("context: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"/h1", ""); r.status != 200 || r.body["session"].(map[string]any)["name"] != "over http" {
		t.Fatalf("open: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"?limit=10", ""); r.status != 200 || len(r.body["sessions"].([]any)) != 1 {
		t.Fatalf("list: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", fmt.Sprintf("%s/h1/wait?sequence=%d&timeoutMs=1000", u, int(seq1)), ""); r.status != 200 || r.body["leaf"] != leaf {
		t.Fatalf("wait: %d %v", r.status, r.body)
	}
	for _, p := range []string{"/h1/tree", "/h1/stats", "/h1/entries?limit=5"} {
		if r := do(t, "GET", u+p, ""); r.status != 200 {
			t.Fatalf("GET %s: %d %v", p, r.status, r.body)
		}
	}
	if r := do(t, "POST", u+"/h1/label", `{"target":"`+leaf+`","label":"x"}`); r.status != 200 {
		t.Fatalf("label: %d %v", r.status, r.body)
	}
	if r := do(t, "POST", g.URL()+"/v1/ops/stats", `{"session":"h1"}`); r.status != 200 || r.body["messages"].(float64) != 1 {
		t.Fatalf("ops/stats: %d %v", r.status, r.body)
	}

	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantCode, wantField      string
	}{
		{name: "conflict", method: "POST", path: "/v1/sessions/h1/entries", body: fmt.Sprintf(`{"ifSequence":%d,"entries":[{"type":"label","targetId":"%s","label":"y"}]}`, int(seq1)-1, leaf), wantStatus: 409, wantCode: "conflict"},
		{name: "unknown field", method: "POST", path: "/v1/sessions/h1/entries", body: `{"entrys":[]}`, wantStatus: 400, wantCode: "bad_request", wantField: "/entrys"},
		{name: "session in body and path", method: "POST", path: "/v1/sessions/h1/name", body: `{"session":"other","name":"x"}`, wantStatus: 400, wantCode: "bad_request", wantField: "/session"},
		{name: "body not an object", method: "POST", path: "/v1/sessions/h1/move", body: `[]`, wantStatus: 400, wantCode: "bad_request"},
		{name: "bad entry", method: "POST", path: "/v1/sessions/h1/entries", body: `{"entries":[{"type":"message","message":{"role":true}}]}`, wantStatus: 422, wantCode: "invalid_entry", wantField: "/entries/0/message/role"},
		{name: "missing session", method: "GET", path: "/v1/sessions/nope", wantStatus: 404, wantCode: "not_found"},
		{name: "bad session id", method: "GET", path: "/v1/sessions/a.b/tree", wantStatus: 400, wantCode: "invalid_session_id", wantField: "/session"},
		{name: "exists", method: "POST", path: "/v1/sessions", body: `{"id":"h1"}`, wantStatus: 409, wantCode: "exists"},
		{name: "unknown query parameter", method: "GET", path: "/v1/sessions?limt=3", wantStatus: 400, wantCode: "bad_request", wantField: "?limt"},
		{name: "non-numeric limit", method: "GET", path: "/v1/sessions?limit=ten", wantStatus: 400, wantCode: "bad_request", wantField: "?limit"},
		{name: "page too large", method: "GET", path: "/v1/sessions?limit=100000", wantStatus: 413, wantCode: "too_large", wantField: "/limit"},
		{name: "body too large", method: "POST", path: "/v1/sessions/h1/entries", body: `{"entries":["` + strings.Repeat("x", 2<<20) + `"]}`, wantStatus: 413, wantCode: "too_large"},
		{name: "large body not an entry", method: "POST", path: "/v1/sessions/h1/entries", body: `{"entries":["` + strings.Repeat("x", 1<<20) + `"]}`, wantStatus: 422, wantCode: "invalid_entry", wantField: "/entries/0"},
		{name: "unknown op", method: "POST", path: "/v1/ops/drop_tables", body: `{}`, wantStatus: 404, wantCode: "not_found"},
		{name: "unknown route", method: "GET", path: "/v2/things", wantStatus: 404, wantCode: "not_found"},
		{name: "wait timeout", method: "GET", path: "/v1/sessions/h1/wait?sequence=999999&timeoutMs=50", wantStatus: 504, wantCode: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, g.URL()+tt.path, tt.body)
			if r.status != tt.wantStatus || errCode(r) != tt.wantCode || errField(r) != tt.wantField {
				t.Fatalf("got %d %s %q, want %d %s %q (%v)", r.status, errCode(r), errField(r), tt.wantStatus, tt.wantCode, tt.wantField, r.body)
			}
		})
	}
	if r := do(t, "DELETE", u+"/h1", ""); r.status != 200 {
		t.Fatalf("delete: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"/h1", ""); r.status != 404 {
		t.Fatalf("open after delete: %d", r.status)
	}
}

func TestGatewayRateLimit(t *testing.T) {
	g := start(t, func(c *gateway.Config) { c.Rate, c.Burst = 1, 3 })
	limited := 0
	for range 10 {
		r := do(t, "GET", g.URL()+"/v1/sessions", "")
		if r.status == 429 {
			limited++
			if r.header.Get("Retry-After") == "" || errCode(r) != "rate_limited" {
				t.Fatalf("429 without Retry-After or code: %v %v", r.header, r.body)
			}
		}
	}
	if limited < 5 {
		t.Fatalf("%d of 10 limited past a burst of 3", limited)
	}
}

// sse reads events from a stream until n have arrived.
type event struct{ id, kind, data string }

func readEvents(t *testing.T, body io.Reader, n int) []event {
	t.Helper()
	sc := bufio.NewScanner(body)
	var out []event
	var cur event
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.kind != "" {
				out = append(out, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	if len(out) < n {
		t.Fatalf("stream ended after %d of %d events: %v", len(out), n, sc.Err())
	}
	return out
}

func openEvents(t *testing.T, ctx context.Context, url string, lastID string, auth ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestEvents(t *testing.T) { sessiontest.EachLayout(t, testEvents) }

func testEvents(t *testing.T, partitions int) {
	g := startOn(t, partitions, func(c *gateway.Config) { c.Heartbeat = 20 * time.Millisecond })
	u := g.URL() + "/v1/sessions"
	do(t, "POST", u, `{"id":"ev"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := openEvents(t, ctx, u+"/ev/events", "")
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		r := do(t, "POST", u+"/ev/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"`+text+`"}}]}`)
		ids = append(ids, r.body["entries"].([]any)[0].(map[string]any)["id"].(string))
	}
	evs := readEvents(t, res.Body, 3)
	for i, ev := range evs {
		var e struct{ ID, Type string }
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil || ev.kind != "entry" || e.ID != ids[i] {
			t.Fatalf("event %d = %+v (%v), want entry %s", i, ev, err, ids[i])
		}
	}
	// A reconnect with Last-Event-ID resumes after it.
	res2 := openEvents(t, ctx, u+"/ev/events", evs[0].id)
	defer res2.Body.Close()
	evs2 := readEvents(t, res2.Body, 2)
	if evs2[0].id != evs[1].id || evs2[1].id != evs[2].id {
		t.Fatalf("resumed at %s, %s; want %s, %s", evs2[0].id, evs2[1].id, evs[1].id, evs[2].id)
	}
	// From the start: the header first.
	res3 := openEvents(t, ctx, u+"/ev/events?after=0", "")
	defer res3.Body.Close()
	if evs3 := readEvents(t, res3.Body, 1); evs3[0].kind != "header" || !strings.Contains(evs3[0].data, `"id":"ev"`) {
		t.Fatalf("first event from the start: %+v", evs3[0])
	}
	for _, bad := range []struct{ url, last string }{{u + "/nobody/events", ""}, {u + "/ev/events?after=x", ""}, {u + "/ev/events", "x"}, {u + "/ev/events?from=1", ""}} {
		r := openEvents(t, ctx, bad.url, bad.last)
		r.Body.Close()
		if r.StatusCode != 404 && r.StatusCode != 400 {
			t.Fatalf("%s (Last-Event-ID %q): %d", bad.url, bad.last, r.StatusCode)
		}
	}
}
