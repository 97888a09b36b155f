package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// archive -delete then unarchive brings a session back as it was, on the
// embedded node (the object store) and to a directory.
func TestArchiveVerbs(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "a1")
	mustRun(t, data, "", "append", "a1", "-text", "keep me")
	before := mustRun(t, data, "", "context", "a1")
	for _, where := range [][]string{nil, {"-dir", t.TempDir()}} {
		out := mustRun(t, data, "", append([]string{"archive", "a1", "-delete"}, where...)...)
		if !strings.Contains(out, "deleted") {
			t.Fatalf("archive said %q", out)
		}
		if code, _, _ := runIn(t, data, "", "context", "a1"); code == 0 {
			t.Fatal("the archived session is still there")
		}
		mustRun(t, data, "", append([]string{"unarchive", "a1"}, where...)...)
		if got := mustRun(t, data, "", "context", "a1"); got != before {
			t.Fatalf("context after unarchive:\n%s\nwant\n%s", got, before)
		}
	}
	if code, _, stderr := runIn(t, data, "", "unarchive", "nope"); code == 0 || !strings.Contains(stderr, "not archived") {
		t.Fatalf("unarchive of nothing: %d %s", code, stderr)
	}
}

// retention -dry-run says what would go and why and changes nothing; the
// run archives and deletes exactly that.
func TestRetentionVerb(t *testing.T) {
	data := t.TempDir()
	for _, id := range []string{"old", "mid", "new"} {
		mustRun(t, data, "", "new", "-id", id)
		mustRun(t, data, "", "append", id, "-text", "in "+id)
	}
	dry := mustRun(t, data, "", "retention", "-max-sessions", "1", "-dry-run")
	if !strings.Contains(dry, "2 of 3 sessions would go") || !strings.Contains(dry, "delete\told") || !strings.Contains(dry, "beyond the 1 most recently updated") {
		t.Fatalf("dry run:\n%s", dry)
	}
	if !strings.Contains(mustRun(t, data, "", "ls"), "old") {
		t.Fatal("the dry run removed something")
	}
	dir := t.TempDir()
	out := mustRun(t, data, "", "retention", "-max-sessions", "1", "-archive", "-dir", dir)
	if strings.Count(out, "archived and deleted") != 2 {
		t.Fatalf("run:\n%s", out)
	}
	if ls := mustRun(t, data, "", "ls"); strings.Contains(ls, "old") || !strings.Contains(ls, "new") {
		t.Fatalf("after the run:\n%s", ls)
	}
	mustRun(t, data, "", "unarchive", "old", "-dir", dir)
	if code, _, stderr := runIn(t, data, "", "retention"); code != 2 || !strings.Contains(stderr, "needs -max-idle") {
		t.Fatalf("no policy: %d %s", code, stderr)
	}
}

// serve runs the configured retention policy on its schedule: sessions
// past it are archived to the object store and deleted.
func TestServeRunsRetention(t *testing.T) {
	dir := t.TempDir()
	policy := dir + "/policy.json"
	if err := os.WriteFile(policy, []byte(`{"maxSessions":1,"archive":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := dir + "/data"
	serveFor(t, data, "-http", "", "-retention", policy, "-retention-every", "100ms")
	for _, id := range []string{"first", "second", "third"} {
		mustRun(t, data, "", "new", "-id", id)
	}
	sessiontest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if ls := mustRun(t, data, "", "ls"); strings.Contains(ls, "first") || strings.Contains(ls, "second") || !strings.Contains(ls, "third") {
			return fmt.Errorf("sessions left:\n%s", ls)
		}
		return nil
	})
	mustRun(t, data, "", "unarchive", "first")
	if !strings.Contains(mustRun(t, data, "", "ls"), "first") {
		t.Fatal("the archived session did not come back")
	}
}

// backup of one data dir restores into another.
func TestBackupVerbs(t *testing.T) {
	data, other := t.TempDir(), t.TempDir()
	for _, id := range []string{"x", "y"} {
		mustRun(t, data, "", "new", "-id", id)
		mustRun(t, data, "", "append", id, "-text", "in "+id)
	}
	dir := t.TempDir() + "/b1"
	if out := mustRun(t, data, "", "backup", dir); !strings.Contains(out, "2 sessions") {
		t.Fatalf("backup said %q", out)
	}
	mustRun(t, data, "", "append", "x", "-text", "later")
	inc := t.TempDir() + "/b2"
	if out := mustRun(t, data, "", "backup", inc, "-base", dir); !strings.Contains(out, "1 written, 1 unchanged") {
		t.Fatalf("incremental backup said %q", out)
	}
	if out := mustRun(t, other, "", "restore", inc); !strings.Contains(out, "2 sessions") {
		t.Fatalf("restore said %q", out)
	}
	for _, id := range []string{"x", "y"} {
		if got, want := mustRun(t, other, "", "context", id), mustRun(t, data, "", "context", id); got != want {
			t.Fatalf("%s restored:\n%s\nwant\n%s", id, got, want)
		}
	}
	if code, _, stderr := runIn(t, other, "", "restore", inc); code == 0 || !strings.Contains(stderr, "exists") {
		t.Fatalf("restore twice: %d %s", code, stderr)
	}
}

// import takes a whole pi sessions tree and says what it did.
func TestImportTree(t *testing.T) {
	data, tree := t.TempDir(), t.TempDir()
	folder := tree + "/--home-me-project--"
	os.MkdirAll(folder, 0o700)
	good := `{"type":"session","version":3,"id":"aaaa1111-2222-3333-4444-555566667777","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/home/me/project"}
{"type":"message","id":"e1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
`
	os.WriteFile(folder+"/2025-01-01T00-00-00-000Z_aaaa1111-2222-3333-4444-555566667777.jsonl", []byte(good), 0o600)
	os.WriteFile(folder+"/2025-01-02T00-00-00-000Z_broken.jsonl", []byte("not json\n"), 0o600)
	code, out, stderr := runIn(t, data, "", "import", tree)
	if code != 0 || !strings.Contains(out, "aaaa1111-2222-3333-4444-555566667777\t1 entries") ||
		!strings.Contains(stderr, "imported 1 of 2 sessions; skipped 1") || !strings.Contains(stderr, "broken.jsonl") {
		t.Fatalf("import of a tree: exit %d\n%s\n%s", code, out, stderr)
	}
	if ls := mustRun(t, "", "", "ls", "-files", tree); !strings.Contains(ls, "aaaa1111-2222-3333-4444-555566667777") {
		t.Fatalf("ls -files of pi's tree:\n%s", ls)
	}
}
