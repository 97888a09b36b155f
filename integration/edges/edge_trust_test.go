package edges

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// scanFor returns the files under dir holding any of secrets.
func scanFor(t *testing.T, dir string, secrets ...string) []string {
	t.Helper()
	var hits []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				hits = append(hits, path+": "+s)
			}
		}
		return nil
	})
	return hits
}

// The tenant's redaction rules run at the edge, before anything leaves
// it: an edge that redacts with them links, and no byte of a secret it
// was given reaches the hub's disk; an edge that does not is refused its
// link, and the hub takes in nothing of it.
func TestEdgeRedactsBeforeAnythingLeaves(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.json")
	os.WriteFile(rules, []byte(`[{"name":"acme-token","pattern":"acme_[0-9a-f]{32}"}]`), 0o600)
	f := newFleet(t, []string{"clean", "leaky"}, fleetOpts{
		tenant: `,"redact":{"defaults":true,"rules":[{"name":"acme-token","pattern":"acme_[0-9a-f]{32}"}]}`,
		edge:   map[string][]string{"clean": {"-redact", "-redact-rules", rules}},
	})
	clean, leaky := f.edges[0], f.edges[1]
	secrets := []string{"AKIAIOSFODNN7EXAMPLE", "acme_0123456789abcdef0123456789abcdef"}
	ctx := context.Background()
	for _, e := range f.edges {
		id := e.domain + "-notes"
		if err := e.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		appendMessages(t, e.c, id, "the key is "+secrets[0]+" and the token "+secrets[1], 3)
	}
	hub := client(t, f.hub.URL, "alice")
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		tr, err := readTree(hub, "clean-notes")
		if err != nil {
			return err
		}
		if len(tr.ids) != 3 {
			return fmt.Errorf("%d entries of clean's at the hub", len(tr.ids))
		}
		return nil
	})
	var e api.EntriesReply
	if err := hub.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "clean-notes"}, &e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(e.Entries[0]), "[REDACTED:acme-token]") || !strings.Contains(string(e.Entries[0]), "[REDACTED:aws-access-key]") {
		t.Fatalf("the hub's copy is not redacted: %s", e.Entries[0])
	}
	// The leaky edge was told why, and the hub holds nothing of it.
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(leaky.proc.Log.String(), "acme-token") {
			return fmt.Errorf("the leaky edge was not told which rules it lacks")
		}
		return nil
	})
	if strings.Contains(leaky.proc.Log.String(), "linked to the hub") {
		t.Fatalf("the hub linked an edge that does not redact:\n%s", leaky.proc.Log.String())
	}
	if err := hub.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "leaky-notes"}, &e); err == nil {
		t.Fatalf("the hub holds the leaky edge's session")
	}
	// Nothing of either secret on the hub's disk: streams, index,
	// snapshots, search index, all of it.
	if hits := scanFor(t, f.hubData, secrets...); len(hits) > 0 {
		t.Fatalf("secrets on the hub's disk:\n%s", strings.Join(hits, "\n"))
	}
	// The scan finds what is there: the edges' own disks hold the
	// leaky edge's secrets (it stores what it is given).
	if hits := scanFor(t, leaky.data, secrets...); len(hits) == 0 {
		t.Fatal("the scan found no secret on the leaky edge's disk either: it cannot tell")
	}
	if hits := scanFor(t, clean.data, secrets...); len(hits) > 0 {
		t.Fatalf("secrets on the clean edge's disk:\n%s", strings.Join(hits, "\n"))
	}
}

// An edge revoked at the hub (removed from the tenants file, the hub
// told with SIGHUP) is cut off at once: its credentials are refused, its
// link closed, the tenant's streams no longer take it in; the other edge
// goes on, and the revoked one still takes its own writes.
func TestEdgeRevokedIsCutOffAtOnce(t *testing.T) {
	f := newFleet(t, []string{"stolen", "kept"}, fleetOpts{})
	stolen, kept := f.edges[0], f.edges[1]
	ctx := context.Background()
	hub := client(t, f.hub.URL, "alice")
	for _, e := range f.edges {
		if err := e.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: e.domain + "-1"}, nil); err != nil {
			t.Fatal(err)
		}
		appendMessages(t, e.c, e.domain+"-1", "before", 2)
	}
	at := func(c *api.Client, id string, n int) func() error {
		return func() error {
			tr, err := readTree(c, id)
			if err != nil {
				return err
			}
			if len(tr.ids) != n {
				return fmt.Errorf("%s: %d entries, want %d", id, len(tr.ids), n)
			}
			return nil
		}
	}
	atHub := func(id string, n int) func() error { return at(hub, id, n) }
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, atHub("stolen-1", 2))
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, atHub("kept-1", 2))
	// A session written at the hub reaches both machines.
	if err := hub.Call(ctx, api.OpCreate, api.CreateRequest{ID: "hub-1"}, nil); err != nil {
		t.Fatal(err)
	}
	appendMessages(t, hub, "hub-1", "before", 2)
	for _, e := range f.edges {
		sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, at(e.c, "hub-1", 2))
	}

	b, _ := os.ReadFile(f.tenants)
	revoked := strings.Replace(string(b), `{"domain":"stolen","user":"stolen","password":"stolen-pw"},`, "", 1)
	if revoked == string(b) {
		t.Fatal("the test's tenants file changed shape")
	}
	os.WriteFile(f.tenants, []byte(revoked), 0o600)
	f.hub.Cmd.Process.Signal(syscall.SIGHUP)
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(f.hub.Log.String(), "edges revoked: acme/stolen") {
			return fmt.Errorf("the hub did not say it revoked the edge")
		}
		return nil
	})
	// Its credentials are refused, as a link and as a client.
	if nc, err := nats.Connect(f.hub.URL, nats.UserInfo("stolen", "stolen-pw")); err == nil {
		nc.Close()
		t.Fatal("the revoked edge's credentials still sign in")
	}
	// The tenant's streams no longer take it in (the hub's status lists
	// each stream's sources).
	st, err := exec.Command(bin, "status", "-url", strings.Replace(f.hub.URL, "nats://", "nats://alice:alice-pw@", 1)).Output()
	if err != nil || !strings.Contains(string(st), "kept") {
		t.Fatalf("the hub's status (%v) does not list the kept edge:\n%s", err, st)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(line, "stolen ") { // an EDGE row
			t.Fatalf("the hub's streams still source the revoked edge:\n%s", st)
		}
	}
	// The revoked machine still takes its own writes; the kept one syncs.
	appendMessages(t, stolen.c, "stolen-1", "after", 1)
	appendMessages(t, kept.c, "kept-1", "after", 1)
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, atHub("kept-1", 3))
	if err := atHub("stolen-1", 2)(); err != nil {
		t.Fatalf("after the revocation: %v", err)
	}
	if strings.Contains(f.hub.Log.String(), "not reloaded") {
		t.Fatalf("the hub could not reload:\n%s", f.hub.Log.String())
	}
	// The hub's writes no longer reach it: its link was cut, and it
	// cannot sign in again (it stayed linked, and took the hub's writes
	// for as long as it ran).
	appendMessages(t, hub, "hub-1", "after", 1)
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, at(kept.c, "hub-1", 3))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if at(stolen.c, "hub-1", 3)() == nil {
			t.Fatal("the hub's write reached the revoked edge")
		}
	}
	// Both sides' status say so: the hub that it revoked the edge, the
	// edge that the hub refuses it.
	st, _ = exec.Command(bin, "status", "-url", strings.Replace(f.hub.URL, "nats://", "nats://alice:alice-pw@", 1)).Output()
	if !strings.Contains(string(st), "note: edge acme/stolen revoked") {
		t.Fatalf("the hub's status does not say it revoked the edge:\n%s", st)
	}
	sessiontest.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		st, err := exec.Command(bin, "status", "-url", stolen.proc.URL).Output()
		if err == nil || !strings.Contains(string(st), "the hub refuses this edge's link") {
			return fmt.Errorf("the revoked edge's status (%v) does not say the hub refuses it:\n%s", err, st)
		}
		return nil
	})
	sessiontest.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		if !strings.Contains(stolen.proc.Log.String(), "the hub refuses this edge's link") {
			return errors.New("the revoked edge's log does not say the hub refuses it")
		}
		return nil
	})
}
