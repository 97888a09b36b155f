package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// servePorc is a `sessionlog serve` process and what it printed.
type serveProc struct {
	cmd  *exec.Cmd
	log  *clustertest.SyncBuffer
	data string
	url  string
	// cliErr is what the CLI run by cli printed on stderr.
	cliErr string
}

// startServe runs serve on data with args until the test ends and waits
// for its URL.
func startServe(t *testing.T, data string, args ...string) *serveProc {
	t.Helper()
	return startServeLimited(t, data, 0, args...)
}

// startServeLimited is startServe under a descriptor limit (0: the
// test's own): serve then runs under sh, after ulimit -n.
func startServeLimited(t *testing.T, data string, nofile int, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{log: &clustertest.SyncBuffer{}, data: data}
	os.Remove(filepath.Join(data, "serve.url"))
	serve := append([]string{"serve", "-data", data, "-listen", "127.0.0.1:0", "-http", ""}, args...)
	if nofile > 0 {
		p.cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf("ulimit -n %d && exec \"$@\"", nofile), "sh", bin}, serve...)...)
	} else {
		p.cmd = exec.Command(bin, serve...)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("serve %v:\n%s", args, tail(p.log.String(), 40))
		}
	})
	sessiontest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		b, err := os.ReadFile(filepath.Join(data, "serve.url"))
		p.url = strings.TrimSpace(string(b))
		return err
	})
	return p
}

func (p *serveProc) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append(args, "-url", p.url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sessionlog %v: %v\n%s", args, err, stderr.String())
	}
	p.cliErr += stderr.String()
	return strings.TrimSpace(string(out))
}

// edgeRig is a hub's and an edge's data dirs, the hub's tenants file
// (acme: alice, and the edge as its edge; more tenants as given) and the
// address the hub takes links at.
type edgeRig struct {
	domain, leaf           string
	hubData, edgeData      string
	tenants, creds         string
	edgeUser, edgePassword string
}

func newEdgeRig(t *testing.T, domain, edgeUser, moreTenants string) *edgeRig {
	t.Helper()
	r := &edgeRig{domain: domain, hubData: t.TempDir(), edgeData: t.TempDir(), edgeUser: edgeUser, edgePassword: domain + "-pw"}
	r.tenants = filepath.Join(r.hubData, "tenants.json")
	os.WriteFile(r.tenants, []byte(`{"tenants":[{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],
  "edges":[{"domain":"`+domain+`","user":"`+edgeUser+`","password":"`+r.edgePassword+`"}]}`+moreTenants+`]}`), 0o600)
	r.creds = filepath.Join(r.edgeData, "hub.creds")
	os.WriteFile(r.creds, []byte(edgeUser+":"+r.edgePassword+"\n"), 0o600)
	r.leaf = fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	return r
}

func (r *edgeRig) startHub(t *testing.T) *serveProc {
	return startServe(t, r.hubData, "-domain", "hub", "-leaf-listen", r.leaf, "-tenants", r.tenants)
}

// startEdge links the edge to the hub at addr ("": the hub's own).
func (r *edgeRig) startEdge(t *testing.T, addr string) *serveProc {
	if addr == "" {
		addr = r.leaf
	}
	return startServe(t, r.edgeData, "-domain", r.domain, "-hub", "nats-leaf://"+addr, "-hub-credentials", r.creds)
}

// client is a sessionlog client on url (as user, with a password of
// user-pw, unless user is "") until the test ends.
func client(t *testing.T, url, user string) *api.Client {
	t.Helper()
	var opts []nats.Option
	if user != "" {
		opts = append(opts, nats.UserInfo(user, user+"-pw"))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return api.NewClient(nc, "sessionlog.v1")
}

// appendMessages appends n user messages of text to session, one a
// request, and returns their ids.
func appendMessages(t *testing.T, c *api.Client, session, text string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		var r api.AppendReply
		for {
			err := c.Call(context.Background(), api.OpAppend, api.AppendRequest{Session: session, Entries: []jsontext.Value{
				jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)}}, &r)
			var ae *api.Error
			if errors.As(err, &ae) && ae.Code == api.CodeRateLimited {
				// The node's bound on one client's requests: as a client
				// would, after the pause it asks for.
				time.Sleep(time.Duration(max(ae.RetryAfterMs, 10)) * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("the edge refused a write: %v", err)
			}
			break
		}
		ids = append(ids, r.Entries[0].ID)
	}
	return ids
}

// hubHolds waits until the hub (c) holds as many entries of sessions as
// want has, and fails unless they are want's, each once, in order.
func hubHolds(t *testing.T, c *api.Client, want []string, sessions ...string) {
	t.Helper()
	var got []string
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		got = got[:0]
		for _, s := range sessions {
			var r api.EntriesReply
			if err := c.Call(context.Background(), api.OpEntries, api.EntriesRequest{Session: s, Limit: 1000}, &r); err != nil {
				return err
			}
			for _, raw := range r.Entries {
				var e struct{ ID string }
				json.Unmarshal(raw, &e)
				got = append(got, e.ID)
			}
		}
		if len(got) < len(want) {
			return fmt.Errorf("%d of %d entries at the hub", len(got), len(want))
		}
		return nil
	})
	if !slices.Equal(got, want) {
		t.Fatalf("the hub holds %d entries, the edge acknowledged %d (or in another order)", len(got), len(want))
	}
}

// An edge node takes a session's writes with its hub down; once the hub
// runs, the edge links to it with credentials of its own, asks it to take
// its sessions in, and the hub serves the session to that tenant — every
// entry, once — while another tenant sees nothing of it.
func TestEdgeSessionsReachTheHub(t *testing.T) {
	r := newEdgeRig(t, "laptop", "alice-laptop", `,
 {"name":"globex","users":[{"user":"bob","password":"bob-pw"}]}`)
	edge := r.startEdge(t, "")
	edge.cli(t, "new", "-id", "offline-1", "-cwd", "/w")
	var ids []string
	for i := range 30 {
		ids = append(ids, edge.cli(t, "append", "offline-1", "-text", fmt.Sprintf("written offline %d", i)))
	}

	hub := r.startHub(t)
	c := client(t, hub.url, "alice")
	ctx := context.Background()
	hubHolds(t, c, ids, "offline-1")
	// Written online, an entry reaches the hub too, readable and
	// searchable there: the lag from the edge's acknowledgement to the
	// hub's read, measured.
	var lags []time.Duration
	for i := range 10 {
		word := fmt.Sprintf("online%dword", i)
		last := edge.cli(t, "append", "offline-1", "-text", "written "+word)
		t0 := time.Now()
		sessiontest.CheckFor(t, 20*time.Second, 5*time.Millisecond, func() error {
			var g api.GetReply
			return c.Call(ctx, api.OpGet, api.GetRequest{Session: "offline-1", Entry: last}, &g)
		})
		lags = append(lags, time.Since(t0))
		if i == 9 {
			sessiontest.CheckFor(t, 2*time.Second, 20*time.Millisecond, func() error {
				var r api.SearchReply
				if err := c.Call(ctx, api.OpSearch, api.SearchRequest{Query: word}, &r); err != nil {
					return err
				}
				if len(r.Hits) != 1 {
					return fmt.Errorf("%d hits for %s at the hub", len(r.Hits), word)
				}
				return nil
			})
		}
	}
	slices.Sort(lags)
	t.Logf("edge append -> readable at the hub: p50 %v, max %v (10 appends); searchable within 2 s", lags[len(lags)/2], lags[len(lags)-1])
	// bob, of another tenant, finds nothing of acme's edge.
	var none api.EntriesReply
	if err := client(t, hub.url, "bob").Call(ctx, api.OpEntries, api.EntriesRequest{Session: "offline-1"}, &none); err == nil {
		t.Fatalf("another tenant reads the edge's session: %d entries", len(none.Entries))
	}
	// The edge's credentials carry its link and nothing else: as a client
	// they neither read the tenant's sessions nor reach its streams.
	ec, err := nats.Connect(hub.url, nats.UserInfo(r.edgeUser, r.edgePassword))
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := api.NewClient(ec, "sessionlog.v1").Call(tctx, api.OpEntries, api.EntriesRequest{Session: "offline-1"}, &none); err == nil {
		t.Fatal("the edge's credentials read the tenant's session")
	}
	if _, err := ec.Request("$JS.API.STREAM.INFO.SESSIONS", nil, time.Second); err == nil {
		t.Fatal("the edge's credentials reach the hub's JetStream API")
	}
	// The hub's status shows the edge's link: its lag and when it was heard.
	st, _ := exec.Command(bin, "status", "-url", strings.Replace(hub.url, "nats://", "nats://alice:alice-pw@", 1)).Output()
	if !strings.Contains(string(st), "EDGE") || !strings.Contains(string(st), "laptop") {
		t.Fatalf("the hub's status does not show the edge:\n%s", st)
	}
	if strings.Contains(edge.cliErr, "replica") {
		t.Fatalf("the CLI on an edge warned of replicas: %s", edge.cliErr)
	}
	if !strings.Contains(edge.log.String(), "linked to the hub") {
		t.Fatalf("the edge did not say it linked:\n%s", edge.log.String())
	}
}

// The hub killed (-9) and restarted twice while an edge writes: the edge
// takes every write meanwhile, and once the link is back the hub holds
// the edge's session exactly — every entry once, in the edge's order.
func TestEdgeWritesThroughHubRestarts(t *testing.T) {
	r := newEdgeRig(t, "box", "box", "")
	hub := r.startHub(t)
	edge := r.startEdge(t, "")
	ec := client(t, edge.url, "")
	if err := ec.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: "box-1"}, nil); err != nil {
		t.Fatal(err)
	}
	ids := appendMessages(t, ec, "box-1", "x", 50)
	for range 2 {
		hub.cmd.Process.Kill() // -9
		hub.cmd.Wait()
		ids = append(ids, appendMessages(t, ec, "box-1", "x", 50)...) // the link is down: the edge takes them
		hub = r.startHub(t)
		ids = append(ids, appendMessages(t, ec, "box-1", "x", 25)...)
	}
	hubHolds(t, client(t, hub.url, "alice"), ids, "box-1")
}

// An edge killed (-9) while the hub takes in what it wrote offline, and
// started again: nothing it acknowledged is lost at the hub, nothing is
// there twice.
func TestEdgeKilledMidSync(t *testing.T) {
	r := newEdgeRig(t, "ci", "ci", "")
	edge := r.startEdge(t, "")
	ec := client(t, edge.url, "")
	var ids, sessions []string
	text := strings.Repeat("w", 20<<10) // 20 KB a message: a sync that takes a moment
	for s := range 5 {
		id := fmt.Sprintf("ci-%d", s)
		if err := ec.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, appendMessages(t, ec, id, text, 60)...)
		sessions = append(sessions, id)
	}
	hub := r.startHub(t)
	// Killed as soon as its link is up: the hub is taking its sessions in.
	sessiontest.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if !strings.Contains(edge.log.String(), "linked to the hub") {
			return fmt.Errorf("not linked yet")
		}
		return nil
	})
	edge.cmd.Process.Kill()
	edge.cmd.Wait()
	r.startEdge(t, "")
	hubHolds(t, client(t, hub.url, "alice"), ids, sessions...)
}

// The link cut again and again while an edge writes and the hub takes in
// what it wrote: every write is taken on the edge, and the hub ends with
// each entry once, in the edge's order.
func TestEdgeLinkCutRepeatedly(t *testing.T) {
	r := newEdgeRig(t, "flaky", "flaky", "")
	hub := r.startHub(t)
	link, err := clustertest.NewProxy(r.leaf)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	edge := r.startEdge(t, link.Addr())
	ec := client(t, edge.url, "")
	if err := ec.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: "flaky-1"}, nil); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("f", 10<<10)
	var ids []string
	for i := range 300 {
		if i%50 == 25 {
			link.SetCut(true) // the link drops mid-sync…
		}
		if i%50 == 40 {
			link.SetCut(false) // …and comes back
		}
		ids = append(ids, appendMessages(t, ec, "flaky-1", text, 1)...)
	}
	link.SetCut(false)
	hubHolds(t, client(t, hub.url, "alice"), ids, "flaky-1")
}
