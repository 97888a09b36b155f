package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// stalled opens an event stream and never reads it: the request is sent
// on a raw connection with a small receive buffer.
func stalled(t *testing.T, base, path string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	return c
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Clients that open event streams and never read them are cut off once
// their buffer (or a write deadline) is passed, and what was held for
// them is released: memory returns to where it was.
func TestStalledEventReadersAreCutOff(t *testing.T) {
	g := start(t, func(c *gateway.Config) {
		c.StreamBuffer, c.WriteTimeout = 256<<10, time.Second
	})
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"flood"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	// The baseline, in the same run: the same appends with no reader
	// (the service's cache of the session's entries grows as much).
	if r := do(t, "POST", u, `{"id":"calm"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	text := strings.Repeat("z", 400<<10)
	appendMB := func(id string) {
		for i := range 60 { // ~24 MB, 400 KB each
			body := `{"entries":[{"type":"message","message":{"role":"user","content":"` + text + `"}}]}`
			if r := do(t, "POST", u+"/"+id+"/entries", body); r.status != 200 {
				t.Fatalf("append %d: %d %v", i, r.status, r.body)
			}
		}
	}
	start := heapInUse()
	appendMB("calm")
	calm := heapInUse()
	const readers = 20
	for range readers {
		stalled(t, g.URL(), "/v1/sessions/flood/events")
	}
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := g.Streams(); n != readers {
			return fmt.Errorf("%d streams open", n)
		}
		return nil
	})
	appendMB("flood")
	sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if n := g.Streams(); n != 0 {
			return fmt.Errorf("%d stalled streams still open", n)
		}
		return nil
	})
	flood := heapInUse()
	t.Logf("heap in use: %d MB at start, %d MB after 24 MB of appends, %d MB after 24 MB more with %d stalled readers (cut off)", start>>20, calm>>20, flood>>20, readers)
	// Signed: the heap may shrink between two readings.
	if grew, base := int64(flood)-int64(calm), int64(calm)-int64(start); grew > base+32<<20 {
		t.Fatalf("with stalled readers the heap grew %d MB, without %d MB: what they held was not released", grew>>20, base>>20)
	}

	// A reader that does read gets every entry, and a slow_reader event
	// (not silence) when it falls behind by more than the buffer.
	res, err := http.Get(u + "/flood/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 2<<20)
	entries, slow := 0, false
	time.Sleep(0) // read at once: the header and the first entries fit
	for sc.Scan() {
		line := sc.Text()
		if line == "event: entry" {
			entries++
		}
		if strings.Contains(line, `"slow_reader"`) {
			slow = true
		}
		if entries == 60 {
			break // all of them: stored apart, the entries queue small
		}
	}
	if entries == 0 && !slow {
		t.Fatal("a reading client got neither entries nor a slow_reader event")
	}
}

// Credentials are checked before anything is counted against a user: a
// flood with a user's name and a wrong password spends nothing of that
// user's budget, is refused from memory after the first try, and its
// source is limited in new logins.
func TestFailedLoginsDoNotThrottleTheRealUser(t *testing.T) {
	ts := servicetest.StartTenants(t,
		cluster.Tenant{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}}},
		cluster.Tenant{Name: "globex", Users: []cluster.User{{Name: "bob", Password: "bob-pw"}}},
	)
	cfg := gateway.DefaultConfig("127.0.0.1:0", ts.Node.ClientURL())
	cfg.Auth, cfg.Rate, cfg.Burst, cfg.LoginRate, cfg.LoginBurst = true, 5, 20, 1, 5
	g, err := gateway.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	u := g.URL() + "/v1/sessions"
	// The attacker comes from 127.0.0.2, bob from 127.0.0.1.
	attacker := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	try := func(pw string) int {
		req, _ := http.NewRequest("GET", u, nil)
		req.SetBasicAuth("bob", pw)
		res, err := attacker.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	codes := map[int]int{}
	for i := range 40 {
		codes[try(fmt.Sprintf("wrong-%d", i))]++
	}
	if codes[200] != 0 || codes[401] == 0 || codes[429] == 0 {
		t.Fatalf("flood of wrong passwords: %v (want 401s, then 429s from the login limit)", codes)
	}
	// The same wrong pair again is refused from memory: 401, not 429.
	for range 10 {
		if code := try("wrong-0"); code != 401 {
			t.Fatalf("a refused pair again: %d", code)
		}
	}
	for i := range 20 {
		if r := do(t, "GET", u, "", "bob", "bob-pw"); r.status != 200 {
			t.Fatalf("bob's request %d after the flood: %d %v", i, r.status, r.body)
		}
	}
	// Absurd credentials are refused as credentials, not as an outage.
	long := strings.Repeat("p", 12<<10)
	if r := do(t, "GET", u, "", "bob", long); r.status != 401 {
		t.Fatalf("a 12 KB password: %d %v", r.status, r.body)
	}
}

// Event streams are bounded per tenant and per user: one tenant holding
// its share leaves another's untouched.
func TestEventStreamsArePerTenant(t *testing.T) {
	ts := servicetest.StartTenants(t,
		cluster.Tenant{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}, {Name: "ann", Password: "ann-pw"}}},
		cluster.Tenant{Name: "globex", Users: []cluster.User{{Name: "bob", Password: "bob-pw"}}},
	)
	cfg := gateway.DefaultConfig("127.0.0.1:0", ts.Node.ClientURL())
	cfg.Auth, cfg.MaxStreamsPerTenant, cfg.MaxStreamsPerUser = true, 3, 2
	g, err := gateway.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	u := g.URL() + "/v1/sessions"
	for _, who := range [][]string{{"alice", "alice-pw"}, {"bob", "bob-pw"}} {
		if r := do(t, "POST", u, `{"id":"s"}`, who...); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
	}
	open := func(user, pw string) *http.Response {
		req, _ := http.NewRequest("GET", u+"/s/events", nil)
		req.SetBasicAuth(user, pw)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for i, c := range []struct {
		user, pw string
		want     int
	}{
		{"alice", "alice-pw", 200}, {"alice", "alice-pw", 200},
		{"alice", "alice-pw", 429}, // alice's own bound
		{"ann", "ann-pw", 200},
		{"ann", "ann-pw", 429}, // acme's bound
		{"bob", "bob-pw", 200}, // globex is untouched
	} {
		if res := open(c.user, c.pw); res.StatusCode != c.want {
			body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
			t.Fatalf("stream %d of %s: %d %s, want %d", i, c.user, res.StatusCode, body, c.want)
		}
	}
}

// Connections cannot be held open for free: an idle kept-alive one is
// closed after IdleTimeout, a slowly sent body after ReadTimeout, and
// Close finishes within its bound whatever such clients do.
func TestConnectionsTimeOut(t *testing.T) {
	g := start(t, func(c *gateway.Config) {
		c.IdleTimeout, c.ReadTimeout = 300*time.Millisecond, 500*time.Millisecond
	})
	addr := strings.TrimPrefix(g.URL(), "http://")
	closedBy := func(c net.Conn) error {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		return err // nil: the server closed it (EOF)
	}
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprint(idle, "GET /v1/sessions HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := closedBy(idle); err != nil {
		t.Fatalf("idle keep-alive connection: %v", err)
	}
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"id\":")
	if err := closedBy(slow); err != nil {
		t.Fatalf("slow body: %v", err)
	}
	// Held open by a body that never comes, Close still returns.
	hold, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	fmt.Fprint(hold, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	done := make(chan error, 1)
	go func() { done <- g.Close(context.Background()) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Close waited on a client sending nothing")
	}
}

// A context larger than one NATS message reaches an HTTP caller whole
// (the gateway joins the service's pages), or page by page on request.
func TestLargeContextOverHTTP(t *testing.T) {
	n, c := clustertest.SmallNode(t, 128<<10)
	b := servicetest.Backend(t, c)
	_, svcCfg := servicetest.Start(t, c, b, func(sc *service.Config) {
		sc.Limits.MaxRequestBytes, sc.Limits.MaxEntryBytes = 100<<10, 100<<10
	})
	gcfg := gateway.DefaultConfig("127.0.0.1:0", n.ClientURL())
	gcfg.Subject, gcfg.Stream = svcCfg.Subject, b.Config()
	g, err := gateway.Start(t.Context(), gcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"big"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	const msgs = 12
	for i := range msgs {
		body := fmt.Sprintf(`{"entries":[{"type":"message","message":{"role":"user","content":"%02d%s"}}]}`, i, strings.Repeat("x", 40<<10))
		if r := do(t, "POST", u+"/big/entries", body); r.status != 200 {
			t.Fatal(r.status, r.body)
		}
	}
	whole := do(t, "GET", u+"/big/context", "")
	got, _ := whole.body["messages"].([]any)
	if whole.status != 200 || len(got) != msgs || whole.body["next"] != nil {
		t.Fatalf("whole context: %d, %d messages, next %v", whole.status, len(got), whole.body["next"])
	}
	for i, m := range got {
		if content, _ := m.(map[string]any)["content"].(string); !strings.HasPrefix(content, fmt.Sprintf("%02d", i)) {
			t.Fatalf("message %d out of order", i)
		}
	}
	page := do(t, "GET", u+"/big/context?offset=0", "")
	part, _ := page.body["messages"].([]any)
	if page.status != 200 || len(part) == 0 || len(part) >= msgs || page.body["next"] == nil {
		t.Fatalf("first page: %d, %d messages, next %v", page.status, len(part), page.body["next"])
	}
	// While MaxAssembling replies are being put together, another waits
	// its turn a moment, then is refused with when to retry; pages are
	// still served.
	release := gateway.HoldAssembling(g)
	busy := do(t, "GET", u+"/big/context", "")
	if busy.status != 429 || errCode(busy) != "rate_limited" || busy.header.Get("Retry-After") == "" {
		t.Fatalf("a whole context while every turn is taken: %d %v", busy.status, busy.body)
	}
	if page := do(t, "GET", u+"/big/context?offset=0", ""); page.status != 200 {
		t.Fatalf("a page meanwhile: %d", page.status)
	}
	release()
	if again := do(t, "GET", u+"/big/context", ""); again.status != 200 {
		t.Fatalf("once a turn is free: %d %v", again.status, again.body)
	}
}

// An event stream's consumer is the caller's and counts towards its bound
// of consumers: it is deleted when the stream ends, so reconnecting many
// times never reaches the bound.
func TestEventStreamsReleaseTheirConsumers(t *testing.T) {
	g, _ := authGateway(t, cluster.Tenant{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}}})
	u := g.URL() + "/v1/sessions"
	alice := []string{"alice", "alice-pw"}
	if r := do(t, "POST", u, `{"id":"s"}`, alice...); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	open := func() (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("GET", u+"/s/events", nil)
		req.SetBasicAuth(alice[0], alice[1])
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("open: %v %v", res, err)
		}
		br := bufio.NewReader(res.Body)
		if _, err := br.ReadString('\n'); err != nil { // the opening comment: the consumer exists
			t.Fatal(err)
		}
		return res, br
	}
	for range 80 { // past the default bound of 64 consumers per user
		res, _ := open()
		res.Body.Close()
		sessiontest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
			if n := g.Streams(); n != 0 {
				return fmt.Errorf("%d streams open", n)
			}
			return nil
		})
	}
	res, br := open()
	defer res.Body.Close()
	if r := do(t, "POST", u+"/s/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"still here"}}]}`, alice...); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	got := make(chan string, 1)
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				got <- err.Error()
				return
			}
			if strings.Contains(line, "still here") {
				got <- "ok"
				return
			}
		}
	}()
	select {
	case s := <-got:
		if s != "ok" {
			t.Fatalf("the 81st stream: %s", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the 81st stream got no event: its consumer was taken away")
	}
}

// Numbers at the edges of their types are refused or clamped, never
// wrapped around.
func TestEdgeNumbers(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"e"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/e/events?after=18446744073709551615", 400},
		{"/e/events?after=9223372036854775807", 400},
		{"/e/entries?offset=9223372036854775807", 200},
		{"/e/entries?offset=-1", 400},
		{"/e/tree?offset=9223372036854775807", 200},
	} {
		r := do(t, "GET", u+c.path, "")
		if r.status != c.want {
			t.Fatalf("%s: %d %v, want %d", c.path, r.status, r.body, c.want)
		}
		if next, ok := r.body["next"].(float64); ok && next < 0 {
			t.Fatalf("%s: next %v", c.path, next)
		}
	}
}

// /healthz answers while the process runs; /readyz only when the node
// can serve, saying what is missing otherwise. Neither needs credentials.
func TestHealthAndReadiness(t *testing.T) {
	var mu sync.Mutex
	notReady := errors.New("cluster x: routes to 0 other node(s), a quorum of 3 nodes needs 1")
	readyErr := notReady
	g := start(t, func(c *gateway.Config) {
		c.Auth = true
		c.Ready = func() error { mu.Lock(); defer mu.Unlock(); return readyErr }
	})
	if r := do(t, "GET", g.URL()+"/healthz", ""); r.status != 200 {
		t.Fatalf("/healthz: %d %v", r.status, r.body)
	}
	r := do(t, "GET", g.URL()+"/readyz", "")
	if r.status != 503 || !strings.Contains(fmt.Sprint(r.body["reason"]), "quorum") {
		t.Fatalf("/readyz while not ready: %d %v", r.status, r.body)
	}
	mu.Lock()
	readyErr = nil
	mu.Unlock()
	if r := do(t, "GET", g.URL()+"/readyz", ""); r.status != 200 {
		t.Fatalf("/readyz when ready: %d %v", r.status, r.body)
	}
}

// A path or query that is not UTF-8 once decoded is a bad request naming
// where, on every route, never an internal error. Before, an entry id of
// %ff in GET /v1/sessions/{id}/entries/{entry} answered 500.
func TestURLsThatAreNotUTF8(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"s"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	for _, path := range []string{
		"/s/entries/%ff", "/%ff", "/%ff/tree", "/s/context?at=%ff", "?name=%ff", "?%ff=1", "/s/events?x=%c3", "/../%ff",
	} {
		r := do(t, "GET", u+path, "")
		if r.status != 400 || errCode(r) != "bad_request" {
			t.Errorf("GET %s: %d %v, want 400 bad_request", path, r.status, r.body)
		}
	}
	if r := do(t, "POST", g.URL()+"/v1/ops/%ff", `{}`); r.status != 400 {
		t.Errorf("POST /v1/ops/%%ff: %d %v", r.status, r.body)
	}
}

// A client that stops reading altogether still gets the documented end
// of its stream: the slow_reader event with the last event it was sent,
// written while the socket has room for it, rather than a connection cut
// when a write has waited out its deadline (what happened before).
func TestStoppedReaderGetsTheSlowReaderEvent(t *testing.T) {
	g := start(t, func(c *gateway.Config) {
		c.StreamBuffer, c.WriteTimeout, c.Rate, c.Burst = 256<<10, 3*time.Second, 1e6, 1e6
	})
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"stop"}`); r.status != 200 {
		t.Fatal(r.status, r.body)
	}
	c := stalled(t, g.URL(), "/v1/sessions/stop/events")
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if g.Streams() != 1 {
			return errors.New("the stream is not open yet")
		}
		return nil
	})
	text := strings.Repeat("s", 40<<10)
	for i := 0; g.Streams() > 0 && i < 2000; i++ {
		body := `{"entries":[{"type":"message","message":{"role":"user","content":"` + text + `"}}]}`
		if r := do(t, "POST", u+"/stop/entries", body); r.status == 429 {
			time.Sleep(100 * time.Millisecond) // the tenant's write rate
		} else if r.status != 200 {
			t.Fatal(r.status, r.body)
		}
	}
	if g.Streams() > 0 {
		t.Fatal("80 MB later the stream of a client that reads nothing is still open")
	}
	// Read what it was sent, up to the end of the stream (the connection
	// itself stays open, kept alive).
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	buf := make([]byte, 64<<10)
	for !bytes.Contains(got[max(0, len(got)-(128<<10)):], []byte("0\r\n\r\n")) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	tail := string(got[max(0, len(got)-600):])
	if !strings.Contains(tail, `"code":"slow_reader"`) || !strings.Contains(tail, `"lastEventId":`) {
		t.Fatalf("the stream ended without the slow_reader event (%d bytes read); it ended:\n%q", len(got), tail)
	}
}
