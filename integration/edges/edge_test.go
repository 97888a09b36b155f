package edges

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

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

// An edge node takes a session's writes with its hub down; once the hub
// runs, the edge links to it with credentials of its own, asks it to take
// its sessions in, and the hub serves the session to that tenant — every
// entry, once — while another tenant sees nothing of it.
func TestEdgeSessionsReachTheHub(t *testing.T) {
	r := newEdgeRig(t, "laptop", "alice-laptop", `,
 {"name":"globex","users":[{"user":"bob","password":"bob-pw"}]}`)
	edge := r.startEdge(t, "")
	edge.CLI(t, "new", "-id", "offline-1", "-cwd", "/w")
	var ids []string
	for i := range 30 {
		ids = append(ids, edge.CLI(t, "append", "offline-1", "-text", fmt.Sprintf("written offline %d", i)))
	}

	hub := r.startHub(t)
	c := client(t, hub.URL, "alice")
	ctx := context.Background()
	hubHolds(t, c, ids, "offline-1")
	// Written online, an entry reaches the hub too, readable and
	// searchable there: the lag from the edge's acknowledgement to the
	// hub's read, measured.
	var lags []time.Duration
	for i := range 10 {
		word := fmt.Sprintf("online%dword", i)
		last := edge.CLI(t, "append", "offline-1", "-text", "written "+word)
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
	if err := client(t, hub.URL, "bob").Call(ctx, api.OpEntries, api.EntriesRequest{Session: "offline-1"}, &none); err == nil {
		t.Fatalf("another tenant reads the edge's session: %d entries", len(none.Entries))
	}
	// The edge's credentials carry its link and nothing else: as a client
	// they neither read the tenant's sessions nor reach its streams.
	ec, err := nats.Connect(hub.URL, nats.UserInfo(r.edgeUser, r.edgePassword))
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
	st, _ := exec.Command(bin, "status", "-url", strings.Replace(hub.URL, "nats://", "nats://alice:alice-pw@", 1)).Output()
	if !strings.Contains(string(st), "EDGE") || !strings.Contains(string(st), "laptop") {
		t.Fatalf("the hub's status does not show the edge:\n%s", st)
	}
	if strings.Contains(edge.CLIErr, "replica") {
		t.Fatalf("the CLI on an edge warned of replicas: %s", edge.CLIErr)
	}
	if !strings.Contains(edge.Log.String(), "linked to the hub") {
		t.Fatalf("the edge did not say it linked:\n%s", edge.Log.String())
	}
}

// The hub killed (-9) and restarted twice while an edge writes: the edge
// takes every write meanwhile, and once the link is back the hub holds
// the edge's session exactly — every entry once, in the edge's order.
func TestEdgeWritesThroughHubRestarts(t *testing.T) {
	r := newEdgeRig(t, "box", "box", "")
	hub := r.startHub(t)
	edge := r.startEdge(t, "")
	ec := client(t, edge.URL, "")
	if err := ec.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: "box-1"}, nil); err != nil {
		t.Fatal(err)
	}
	ids := appendMessages(t, ec, "box-1", "x", 50)
	for range 2 {
		hub.Cmd.Process.Kill() // -9
		hub.Cmd.Wait()
		ids = append(ids, appendMessages(t, ec, "box-1", "x", 50)...) // the link is down: the edge takes them
		hub = r.startHub(t)
		ids = append(ids, appendMessages(t, ec, "box-1", "x", 25)...)
	}
	hubHolds(t, client(t, hub.URL, "alice"), ids, "box-1")
}

// An edge killed (-9) while the hub takes in what it wrote offline, and
// started again: nothing it acknowledged is lost at the hub, nothing is
// there twice.
func TestEdgeKilledMidSync(t *testing.T) {
	r := newEdgeRig(t, "ci", "ci", "")
	edge := r.startEdge(t, "")
	ec := client(t, edge.URL, "")
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
		if !strings.Contains(edge.Log.String(), "linked to the hub") {
			return fmt.Errorf("not linked yet")
		}
		return nil
	})
	edge.Cmd.Process.Kill()
	edge.Cmd.Wait()
	r.startEdge(t, "")
	hubHolds(t, client(t, hub.URL, "alice"), ids, sessions...)
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
	ec := client(t, edge.URL, "")
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
	hubHolds(t, client(t, hub.URL, "alice"), ids, "flaky-1")
}
