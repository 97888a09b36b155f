package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
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
	p := &serveProc{log: &clustertest.SyncBuffer{}, data: data}
	os.Remove(filepath.Join(data, "serve.url"))
	p.cmd = exec.Command(bin, append([]string{"serve", "-data", data, "-listen", "127.0.0.1:0", "-http", ""}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("serve %v:\n%s", args, tail(p.log.String(), 30))
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

// An edge node takes a session's writes with its hub down; once the hub
// runs, the edge links to it as a tenant's user, asks it to take its
// sessions in, and the hub serves the session to that tenant — every
// entry, once — while another tenant sees nothing of it.
func TestEdgeSessionsReachTheHub(t *testing.T) {
	hubData, edgeData := t.TempDir(), t.TempDir()
	tenants := filepath.Join(hubData, "tenants.json")
	os.WriteFile(tenants, []byte(`{"tenants":[
 {"name":"acme","users":[{"user":"alice","password":"alice-pw"}],
  "edges":[{"domain":"laptop","user":"alice-laptop","password":"laptop-pw"}]},
 {"name":"globex","users":[{"user":"bob","password":"bob-pw"}]}]}`), 0o600)
	creds := filepath.Join(edgeData, "hub.creds")
	os.WriteFile(creds, []byte("alice-laptop:laptop-pw\n"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaf := ln.Addr().String()
	ln.Close()

	edge := startServe(t, edgeData, "-domain", "laptop", "-hub", "nats-leaf://"+leaf, "-hub-credentials", creds)
	edge.cli(t, "new", "-id", "offline-1", "-cwd", "/w")
	var ids []string
	for i := range 30 {
		ids = append(ids, edge.cli(t, "append", "offline-1", "-text", fmt.Sprintf("written offline %d", i)))
	}

	hub := startServe(t, hubData, "-domain", "hub", "-leaf-listen", leaf, "-tenants", tenants)
	alice, err := nats.Connect(hub.url, nats.UserInfo("alice", "alice-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	c := api.NewClient(alice, "sessionlog.v1")
	ctx := context.Background()
	var got api.EntriesReply
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		got = api.EntriesReply{}
		if err := c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "offline-1"}, &got); err != nil {
			return err
		}
		if len(got.Entries) != 30 {
			return fmt.Errorf("%d entries at the hub", len(got.Entries))
		}
		return nil
	})
	for i, raw := range got.Entries {
		var e struct{ ID string }
		json.Unmarshal(raw, &e)
		if e.ID != ids[i] {
			t.Fatalf("entry %d at the hub is %s, the edge wrote %s", i, e.ID, ids[i])
		}
	}
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
	bob, err := nats.Connect(hub.url, nats.UserInfo("bob", "bob-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	var none api.EntriesReply
	if err := api.NewClient(bob, "sessionlog.v1").Call(ctx, api.OpEntries, api.EntriesRequest{Session: "offline-1"}, &none); err == nil {
		t.Fatalf("another tenant reads the edge's session: %d entries", len(none.Entries))
	}
	// The edge's credentials carry its link and nothing else: as a client
	// they neither read the tenant's sessions nor reach its streams.
	ec, err := nats.Connect(hub.url, nats.UserInfo("alice-laptop", "laptop-pw"))
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
	hubData, edgeData := t.TempDir(), t.TempDir()
	tenants := filepath.Join(hubData, "tenants.json")
	os.WriteFile(tenants, []byte(`{"tenants":[{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],
  "edges":[{"domain":"box","user":"box","password":"box-pw"}]}]}`), 0o600)
	creds := filepath.Join(edgeData, "hub.creds")
	os.WriteFile(creds, []byte("box:box-pw\n"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaf := ln.Addr().String()
	ln.Close()
	hubArgs := []string{"-domain", "hub", "-leaf-listen", leaf, "-tenants", tenants}
	hub := startServe(t, hubData, hubArgs...)
	edge := startServe(t, edgeData, "-domain", "box", "-hub", "nats-leaf://"+leaf, "-hub-credentials", creds)
	enc, err := nats.Connect(edge.url)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	ec := api.NewClient(enc, "sessionlog.v1")
	ctx := context.Background()
	if err := ec.Call(ctx, api.OpCreate, api.CreateRequest{ID: "box-1"}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	write := func(n int) {
		for range n {
			var r api.AppendReply
			if err := ec.Call(ctx, api.OpAppend, api.AppendRequest{Session: "box-1", Entries: []jsontext.Value{
				jsontext.Value(`{"type":"message","message":{"role":"user","content":"x"}}`)}}, &r); err != nil {
				t.Fatalf("the edge refused a write: %v", err)
			}
			ids = append(ids, r.Entries[0].ID)
		}
	}
	write(50)
	for range 2 {
		hub.cmd.Process.Kill() // -9
		hub.cmd.Wait()
		write(50) // the link is down: the edge takes them
		hub = startServe(t, hubData, hubArgs...)
		write(25)
	}
	alice, err := nats.Connect(hub.url, nats.UserInfo("alice", "alice-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	c := api.NewClient(alice, "sessionlog.v1")
	var got api.EntriesReply
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		got = api.EntriesReply{}
		if err := c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "box-1", Limit: 1000}, &got); err != nil {
			return err
		}
		if len(got.Entries) < len(ids) {
			return fmt.Errorf("%d of %d entries at the hub", len(got.Entries), len(ids))
		}
		return nil
	})
	if len(got.Entries) != len(ids) {
		t.Fatalf("%d entries at the hub, the edge wrote %d", len(got.Entries), len(ids))
	}
	for i, raw := range got.Entries {
		var e struct{ ID string }
		json.Unmarshal(raw, &e)
		if e.ID != ids[i] {
			t.Fatalf("entry %d at the hub is %s, the edge wrote %s", i, e.ID, ids[i])
		}
	}
}

// An edge killed (-9) while the hub takes in what it wrote offline, and
// started again: nothing it acknowledged is lost at the hub, nothing is
// there twice.
func TestEdgeKilledMidSync(t *testing.T) {
	hubData, edgeData := t.TempDir(), t.TempDir()
	tenants := filepath.Join(hubData, "tenants.json")
	os.WriteFile(tenants, []byte(`{"tenants":[{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],
  "edges":[{"domain":"ci","user":"ci","password":"ci-pw"}]}]}`), 0o600)
	creds := filepath.Join(edgeData, "hub.creds")
	os.WriteFile(creds, []byte("ci:ci-pw\n"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaf := ln.Addr().String()
	ln.Close()
	edgeArgs := []string{"-domain", "ci", "-hub", "nats-leaf://" + leaf, "-hub-credentials", creds}
	edge := startServe(t, edgeData, edgeArgs...)
	enc, err := nats.Connect(edge.url)
	if err != nil {
		t.Fatal(err)
	}
	ec := api.NewClient(enc, "sessionlog.v1")
	ctx := context.Background()
	var ids []string
	text := strings.Repeat("w", 20<<10) // 20 KB a message: a sync that takes a moment
	for s := range 5 {
		id := fmt.Sprintf("ci-%d", s)
		if err := ec.Call(ctx, api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		for range 60 {
			var r api.AppendReply
			if err := ec.Call(ctx, api.OpAppend, api.AppendRequest{Session: id, Entries: []jsontext.Value{
				jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)}}, &r); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.Entries[0].ID)
		}
	}
	enc.Close()
	hub := startServe(t, hubData, "-domain", "hub", "-leaf-listen", leaf, "-tenants", tenants)
	// Killed as soon as its link is up: the hub is taking its sessions in.
	sessiontest.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if !strings.Contains(edge.log.String(), "linked to the hub") {
			return fmt.Errorf("not linked yet")
		}
		return nil
	})
	edge.cmd.Process.Kill()
	edge.cmd.Wait()
	edge = startServe(t, edgeData, edgeArgs...)

	alice, err := nats.Connect(hub.url, nats.UserInfo("alice", "alice-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	c := api.NewClient(alice, "sessionlog.v1")
	var got []string
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		got = got[:0]
		for s := range 5 {
			var r api.EntriesReply
			if err := c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: fmt.Sprintf("ci-%d", s), Limit: 1000}, &r); err != nil {
				return err
			}
			for _, raw := range r.Entries {
				var e struct{ ID string }
				json.Unmarshal(raw, &e)
				got = append(got, e.ID)
			}
		}
		if len(got) < len(ids) {
			return fmt.Errorf("%d of %d entries at the hub", len(got), len(ids))
		}
		return nil
	})
	if !slices.Equal(got, ids) {
		t.Fatalf("the hub holds %d entries, the edge acknowledged %d (or in another order)", len(got), len(ids))
	}
}

// The link cut again and again while an edge writes and the hub takes in
// what it wrote: every write is taken on the edge, and the hub ends with
// each entry once, in the edge's order.
func TestEdgeLinkCutRepeatedly(t *testing.T) {
	hubData, edgeData := t.TempDir(), t.TempDir()
	tenants := filepath.Join(hubData, "tenants.json")
	os.WriteFile(tenants, []byte(`{"tenants":[{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],
  "edges":[{"domain":"flaky","user":"flaky","password":"flaky-pw"}]}]}`), 0o600)
	creds := filepath.Join(edgeData, "hub.creds")
	os.WriteFile(creds, []byte("flaky:flaky-pw\n"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaf := ln.Addr().String()
	ln.Close()
	hub := startServe(t, hubData, "-domain", "hub", "-leaf-listen", leaf, "-tenants", tenants)
	link, err := clustertest.NewProxy(leaf)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	edge := startServe(t, edgeData, "-domain", "flaky", "-hub", "nats-leaf://"+link.Addr(), "-hub-credentials", creds)
	enc, err := nats.Connect(edge.url)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	ec := api.NewClient(enc, "sessionlog.v1")
	ctx := context.Background()
	if err := ec.Call(ctx, api.OpCreate, api.CreateRequest{ID: "flaky-1"}, nil); err != nil {
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
		var r api.AppendReply
		if err := ec.Call(ctx, api.OpAppend, api.AppendRequest{Session: "flaky-1", Entries: []jsontext.Value{
			jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)}}, &r); err != nil {
			t.Fatalf("the edge refused write %d: %v", i, err)
		}
		ids = append(ids, r.Entries[0].ID)
	}
	link.SetCut(false)
	alice, err := nats.Connect(hub.url, nats.UserInfo("alice", "alice-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	c := api.NewClient(alice, "sessionlog.v1")
	var got []string
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		var r api.EntriesReply
		if err := c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "flaky-1", Limit: 1000}, &r); err != nil {
			return err
		}
		got = got[:0]
		for _, raw := range r.Entries {
			var e struct{ ID string }
			json.Unmarshal(raw, &e)
			got = append(got, e.ID)
		}
		if len(got) < len(ids) {
			return fmt.Errorf("%d of %d entries at the hub", len(got), len(ids))
		}
		return nil
	})
	if !slices.Equal(got, ids) {
		t.Fatalf("the hub holds %d entries, the edge acknowledged %d (or in another order)", len(got), len(ids))
	}
}
