package edges

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// fleet is a hub and edges of tenant acme, each edge linked through a
// proxy the test can cut.
type fleet struct {
	tenants, leaf string
	hubData       string
	hub           *serveProc
	edges         []*fleetEdge
}

type fleetEdge struct {
	domain string
	data   string
	link   *clustertest.Proxy
	proc   *serveProc
	c      *api.Client
}

// fleetOpts are more of a fleet's settings: members of tenant acme
// (JSON, after its users and edges), and serve flags of the hub and of
// each edge.
type fleetOpts struct {
	tenant string
	hub    []string
	edge   map[string][]string
	// apart starts the edges with their links cut: never linked yet.
	apart bool
}

// newFleet starts a hub (domain hub) and an edge per domain, linked.
func newFleet(t *testing.T, domains []string, o fleetOpts) *fleet {
	t.Helper()
	f := &fleet{}
	hubData := t.TempDir()
	f.hubData = hubData
	var edges []string
	for _, d := range domains {
		edges = append(edges, fmt.Sprintf(`{"domain":%q,"user":%q,"password":%q}`, d, d, d+"-pw"))
	}
	f.tenants = filepath.Join(hubData, "tenants.json")
	os.WriteFile(f.tenants, []byte(`{"tenants":[{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],"edges":[`+strings.Join(edges, ",")+`]`+o.tenant+`}]}`), 0o600)
	f.leaf = fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	f.hub = startServe(t, hubData, append([]string{"-domain", "hub", "-leaf-listen", f.leaf, "-tenants", f.tenants}, o.hub...)...)
	for _, d := range domains {
		e := &fleetEdge{domain: d}
		var err error
		if e.link, err = clustertest.NewProxy(f.leaf); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.link.Close() })
		e.link.SetCut(o.apart)
		data := t.TempDir()
		creds := filepath.Join(data, "hub.creds")
		os.WriteFile(creds, []byte(d+":"+d+"-pw\n"), 0o600)
		e.data = data
		e.proc = startServe(t, data, append([]string{"-domain", d, "-hub", "nats-leaf://" + e.link.Addr(), "-hub-credentials", creds}, o.edge[d]...)...)
		e.c = client(t, e.proc.URL, "")
		f.edges = append(f.edges, e)
	}
	// Linked both ways (or told why not), before the test begins.
	for _, e := range f.edges {
		if o.apart {
			break
		}
		sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			if l := e.proc.Log.String(); !strings.Contains(l, "take in the hub's sessions") && !strings.Contains(l, "did not take this edge's sessions in") {
				return fmt.Errorf("%s not linked yet", e.domain)
			}
			return nil
		})
	}
	return f
}

// treeAt is a session's tree as a node serves it: entry ids in order,
// leaf, and the branches written apart.
type treeAt struct {
	ids   []string
	leaf  string
	apart []api.Apart
}

func readTree(c *api.Client, id string) (treeAt, error) {
	var out treeAt
	for offset := 0; ; {
		var r api.TreeReply
		if err := c.Call(context.Background(), api.OpTree, api.TreeRequest{Session: id, Offset: offset}, &r); err != nil {
			return out, err
		}
		for _, n := range r.Nodes {
			out.ids = append(out.ids, n.ID)
		}
		out.leaf, out.apart = r.Leaf, r.Apart
		if r.Next == 0 {
			return out, nil
		}
		offset = r.Next
	}
}

// same reports how two nodes' trees of a session differ: the same
// entries (each once), the same leaf, the same branches apart.
func (a treeAt) same(b treeAt) error {
	as, bs := slices.Sorted(slices.Values(a.ids)), slices.Sorted(slices.Values(b.ids))
	for i := 1; i < len(as); i++ {
		if as[i] == as[i-1] {
			return fmt.Errorf("entry %s twice", as[i])
		}
	}
	for i := 1; i < len(bs); i++ {
		if bs[i] == bs[i-1] {
			return fmt.Errorf("entry %s twice in the other", bs[i])
		}
	}
	switch {
	case !slices.Equal(as, bs):
		return fmt.Errorf("%d entries against %d", len(a.ids), len(b.ids))
	case a.leaf != b.leaf:
		return fmt.Errorf("leaf %s against %s", a.leaf, b.leaf)
	case fmt.Sprint(a.apart) != fmt.Sprint(b.apart):
		return fmt.Errorf("apart %v against %v", a.apart, b.apart)
	}
	return nil
}

// Two edges write the same sessions while cut off from the hub and from
// each other: A 1,000 entries across 20 sessions, B 50 to 5 of them.
// Linked again, the hub and both edges converge to the same trees —
// every entry once, B's branch the leaf where it wrote last, A's branch
// told apart — and the time that takes is measured.
func TestEdgesWritingApartConverge(t *testing.T) {
	// A's link through a bandwidth bound (4 MiB/s): the relay in the way.
	f := newFleet(t, []string{"laptop-a", "laptop-b"}, fleetOpts{edge: map[string][]string{"laptop-a": {"-hub-bandwidth", "4194304"}}})
	a, b := f.edges[0], f.edges[1]
	hub := client(t, f.hub.URL, "alice")
	ctx := context.Background()
	var sessions []string
	for i := range 20 {
		id := fmt.Sprintf("shared-%02d", i)
		if err := a.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		appendMessages(t, a.c, id, "before", 2)
		sessions = append(sessions, id)
	}
	// Online, B comes to hold A's sessions through the hub.
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		for _, id := range sessions {
			ta, err := readTree(a.c, id)
			if err != nil {
				return err
			}
			tb, err := readTree(b.c, id)
			if err != nil {
				return fmt.Errorf("B: %w", err)
			}
			if err := ta.same(tb); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	})

	a.link.SetCut(true)
	b.link.SetCut(true)
	for _, id := range sessions {
		appendMessages(t, a.c, id, "written on a", 50)
	}
	for _, id := range sessions[:5] {
		appendMessages(t, b.c, id, "written on b", 10)
	}
	want := map[string]treeAt{}
	for _, id := range sessions {
		ta, _ := readTree(a.c, id)
		tb, _ := readTree(b.c, id)
		wantB := 2
		if id <= sessions[4] {
			wantB = 12
		}
		if len(ta.ids) != 52 || len(tb.ids) != wantB {
			t.Fatalf("%s: A holds %d entries, B %d, while apart (want 52, %d)", id, len(ta.ids), len(tb.ids), wantB)
		}
		if id <= sessions[4] {
			want[id] = treeAt{ids: append(slices.Clone(ta.ids), tb.ids[len(tb.ids)-10:]...), leaf: tb.leaf, apart: []api.Apart{{Origin: "laptop-a", Leaf: ta.leaf}}}
		} else {
			want[id] = treeAt{ids: ta.ids, leaf: ta.leaf}
		}
	}

	t0 := time.Now()
	a.link.SetCut(false)
	b.link.SetCut(false)
	nodes := map[string]*api.Client{"hub": hub, "laptop-a": a.c, "laptop-b": b.c}
	sessiontest.CheckFor(t, 120*time.Second, 100*time.Millisecond, func() error {
		for name, c := range nodes {
			for _, id := range sessions {
				got, err := readTree(c, id)
				if err != nil {
					return fmt.Errorf("%s %s: %w", name, id, err)
				}
				w := want[id]
				for i := range got.apart {
					got.apart[i].At = "" // compared by origin and tip
				}
				if err := got.same(w); err != nil {
					return fmt.Errorf("%s %s: %w", name, id, err)
				}
			}
		}
		return nil
	})
	t.Logf("1,050 entries written apart on two edges (20 sessions, 5 written on both): hub and edges agree %v after the links are back", time.Since(t0).Round(time.Millisecond))
}

// A Claude Code session followed on one machine is searchable at the hub
// within 2 s, and resumed on another machine it is the file the first
// had, byte for byte but for the working directory mapped.
func TestEdgeClaudeCodeSessionFollowsItsUser(t *testing.T) {
	f := newFleet(t, []string{"laptop-a", "laptop-b"}, fleetOpts{})
	a, b := f.edges[0], f.edges[1]
	projects := t.TempDir()
	follow := exec.Command(bin, "follow", "-interval", "50ms", "-state", "none", "-url", a.proc.URL, projects)
	var followLog clustertest.SyncBuffer
	follow.Stdout, follow.Stderr = &followLog, &followLog
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		follow.Process.Kill()
		follow.Wait()
		if t.Failed() {
			t.Logf("follow:\n%s", followLog.String())
		}
	})
	claude, err := os.ReadFile("../../transcript/testdata/claude-code/short.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const id = "11111111-2222-4333-8444-555555555555"
	dir := filepath.Join(projects, "-home-marco-projects-spotter")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, id+".jsonl.tmp"), claude, 0o600)
	os.Rename(filepath.Join(dir, id+".jsonl.tmp"), filepath.Join(dir, id+".jsonl"))
	t0 := time.Now()
	hub := client(t, f.hub.URL, "alice")
	sessiontest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		var r api.SearchReply
		if err := hub.Call(context.Background(), api.OpSearch, api.SearchRequest{Query: "phx.server"}, &r); err != nil {
			return err
		}
		if len(r.Hits) == 0 {
			ta, aerr := readTree(a.c, id)
			th, herr := readTree(hub, id)
			st, _ := exec.Command(bin, "status", "-url", strings.Replace(f.hub.URL, "nats://", "nats://alice:alice-pw@", 1)).CombinedOutput()
			return fmt.Errorf("not found at the hub yet (A: %d %v, hub: %d %v)\n%s", len(ta.ids), aerr, len(th.ids), herr, st)
		}
		return nil
	})
	t.Logf("written on A -> searchable at the hub: %v", time.Since(t0).Round(time.Millisecond))

	home := t.TempDir()
	var out []byte
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		cmd := exec.Command(bin, "resume", id, "-home", home, "-map", "/home/marco/projects=/Users/m/src_x", "-url", b.proc.URL)
		cmd.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR=", "CODEX_HOME=", "PI_CODING_AGENT_DIR=")
		var err error
		out, err = cmd.CombinedOutput()
		return err
	})
	got, err := os.ReadFile(filepath.Join(home, ".claude", "projects", "-Users-m-src-x-spotter", id+".jsonl"))
	if err != nil {
		t.Fatalf("resume on B said %s: %v", out, err)
	}
	mapped := bytes.ReplaceAll(claude, []byte(`"cwd":"/home/marco/projects/spotter"`), []byte(`"cwd":"/Users/m/src_x/spotter"`))
	if bytes.Equal(mapped, claude) || !bytes.Equal(got, mapped) {
		t.Fatalf("B's file is not A's with its cwd mapped (%d bytes, want %d)", len(got), len(mapped))
	}
}
