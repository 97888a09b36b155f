package filestore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

var ctx = context.Background()

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func appendUser(t *testing.T, s session.Store, text string) *session.Entry {
	t.Helper()
	sess, err := session.New(s, session.Config{Clock: sessiontest.NewSteppingClock(), IDs: session.IDFunc(func() string { return "n-" + text })})
	if err != nil {
		t.Fatal(err)
	}
	e, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(text)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOpenRepairsTornTail(t *testing.T) {
	p := writeFile(t, []byte(sessiontest.HeaderLine+"\n"+sessiontest.UserLine("a", "")+"\n"+`{"type":"message","id":"b","pa`))
	s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if is := s.Issues(); len(is) != 1 || !errors.Is(is[0], codec.ErrTornWrite) {
		t.Fatalf("issues = %v, want the torn line", is)
	}
	appendUser(t, s, "after")
	s.Close(ctx)
	data, _ := os.ReadFile(p)
	if bytes.Contains(data, []byte(`"pa`+"\n")) || bytes.Contains(data, []byte(`"id":"b"`)) {
		t.Fatalf("torn bytes survived:\n%s", data)
	}
	s2, err := filestore.Open(ctx, p, filestore.DefaultConfig())
	if err != nil {
		t.Fatalf("strict reopen: %v", err)
	}
	defer s2.Close(ctx)
	es, _ := s2.Entries(ctx)
	if len(es) != 2 || es[1].ParentID != "a" {
		t.Fatalf("entries after repair: %d", len(es))
	}
}

func TestOpenTerminatesLastLine(t *testing.T) {
	p := writeFile(t, []byte(sessiontest.HeaderLine+"\n"+sessiontest.UserLine("a", "")))
	s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendUser(t, s, "b")
	s.Close(ctx)
	ld := mustLoad(t, p)
	if n := len(sessiontest.Entries(t, ld.Tree)); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
}

func mustLoad(t *testing.T, p string) *codec.File {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := codec.DecodeFile(data, p, codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	return ld
}

// Every prefix of a file — what a crash at any byte of any append leaves —
// loads, in strict mode, with every complete line intact.
func TestEveryCrashPointKeepsEarlierEntries(t *testing.T) {
	var sample sessiontest.PiSample
	for _, s := range sessiontest.PiSamples(t) {
		if s.Name == "scenario-9.jsonl" {
			sample = s
		}
	}
	data := sample.Data
	lines := bytes.SplitAfter(data, []byte("\n"))
	hdrLen := len(lines[0])
	for cut := hdrLen; cut <= len(data); cut++ {
		prefix := data[:cut]
		ld, err := codec.DecodeFile(prefix, "p", codec.Strict)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		complete := bytes.Count(prefix, []byte("\n")) - 1
		n := len(sessiontest.Entries(t, ld.Tree))
		// A last line cut exactly before its newline is complete JSON.
		if n != complete && n != complete+1 {
			t.Fatalf("cut at %d: %d entries, want %d complete lines", cut, n, complete)
		}
	}
}

func TestLocking(t *testing.T) {
	p := writeFile(t, sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", "")))
	s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := filestore.Open(ctx, p, filestore.DefaultConfig()); !errors.Is(err, filestore.ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	ro := filestore.DefaultConfig()
	ro.ReadOnly = true
	r, err := filestore.Open(ctx, p, ro)
	if err != nil {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	if err := r.Append(ctx, &session.Entry{Type: session.TypeLabel, ID: "l", ParentID: "a", Body: &session.Label{TargetID: "a", Label: "x"}}); err == nil {
		t.Fatal("append to a read-only store succeeded")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Leaf(ctx); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("use after close: %v, want ErrClosed", err)
	}
	s2, err := filestore.Open(ctx, p, filestore.DefaultConfig())
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close(ctx)
}

func TestCreate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "new.jsonl")
	h := sessiontest.TestHeader("new")
	s, err := filestore.Create(ctx, p, h, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	if _, err := filestore.Create(ctx, p, h, filestore.DefaultConfig()); !errors.Is(err, filestore.ErrExists) {
		t.Fatalf("create over an existing file: %v, want ErrExists", err)
	}
	data, _ := os.ReadFile(p)
	if want := `{"type":"session","version":3,"id":"new","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}` + "\n"; string(data) != want {
		t.Fatalf("file = %q, want %q", data, want)
	}
	bad := filestore.DefaultConfig()
	bad.Sync = 7
	if _, err := filestore.Create(ctx, p+"2", h, bad); !errors.Is(err, filestore.ErrInvalidConfig) {
		t.Fatalf("bad config: %v", err)
	}
}

func TestWritableOpenMigratesOnDisk(t *testing.T) {
	p := writeFile(t, sessiontest.Lines(
		`{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}`,
	))
	s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendUser(t, s, "two")
	s.Close(ctx)
	data, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"version":3`) || !strings.Contains(lines[1], `"id":"`) {
		t.Fatalf("file not migrated:\n%s", data)
	}
	if _, err := os.Stat(p + ".migrate.tmp"); !os.IsNotExist(err) {
		t.Fatal("temporary file left behind")
	}
	ld := mustLoad(t, p)
	if ld.Migrated || len(sessiontest.Entries(t, ld.Tree)) != 2 {
		t.Fatalf("reloaded: migrated=%v entries=%d", ld.Migrated, len(sessiontest.Entries(t, ld.Tree)))
	}
}

func TestRefusals(t *testing.T) {
	newer := sessiontest.Lines(`{"type":"session","version":4,"id":"s","timestamp":"t","cwd":"/"}`, sessiontest.UserLine("a", ""))
	p := writeFile(t, newer)
	if _, err := filestore.Open(ctx, p, filestore.DefaultConfig()); !errors.Is(err, filestore.ErrUnsupportedVersion) {
		t.Fatalf("writable open of v4: %v", err)
	}
	ro := filestore.DefaultConfig()
	ro.ReadOnly = true
	if s, err := filestore.Open(ctx, p, ro); err != nil {
		t.Fatalf("read-only open of v4: %v", err)
	} else {
		s.Close(ctx)
	}

	oldBad := sessiontest.Lines(`{"type":"session","version":2,"id":"s","timestamp":"t","cwd":"/"}`, sessiontest.UserLine("a", ""), "garbage")
	p2 := writeFile(t, oldBad)
	lenient := filestore.DefaultConfig()
	lenient.Mode = codec.Lenient
	if _, err := filestore.Open(ctx, p2, lenient); !errors.Is(err, filestore.ErrNeedsRepair) {
		t.Fatalf("migrating a file with bad lines: %v", err)
	}
	if got, _ := os.ReadFile(p2); !bytes.Equal(got, oldBad) {
		t.Fatal("a refused open changed the file")
	}

	strictBad := sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), "garbage", sessiontest.UserLine("b", "a"))
	p3 := writeFile(t, strictBad)
	if _, err := filestore.Open(ctx, p3, filestore.DefaultConfig()); !errors.Is(err, codec.ErrMalformedLine) {
		t.Fatalf("strict open of a bad file: %v", err)
	}
	s, err := filestore.Open(ctx, p3, lenient)
	if err != nil {
		t.Fatalf("lenient open: %v", err)
	}
	appendUser(t, s, "c")
	s.Close(ctx)
	got, _ := os.ReadFile(p3)
	if !bytes.HasPrefix(got, strictBad) {
		t.Fatal("a lenient open lost the lines it skipped")
	}
}

// A writer killed with SIGKILL in the middle of appends loses no entry it
// acknowledged, and the file opens strictly afterwards.
func TestKillDuringAppends(t *testing.T) {
	if os.Getenv("SESSIONLOG_CHILD_FILE") != "" {
		childAppendForever(os.Getenv("SESSIONLOG_CHILD_FILE"))
		return
	}
	for round := range 3 {
		p := filepath.Join(t.TempDir(), "crash.jsonl")
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringAppends$")
		cmd.Env = append(os.Environ(), "SESSIONLOG_CHILD_FILE="+p)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked []string
		sc := bufio.NewScanner(out)
		stopAt := 50 + round*100
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
				acked = append(acked, id)
				if len(acked) == stopAt {
					break
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if len(acked) < stopAt {
			t.Fatalf("child stopped after %d acks", len(acked))
		}
		s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		have := map[string]bool{}
		es, _ := s.Entries(ctx)
		for _, e := range es {
			have[e.ID] = true
		}
		for _, id := range acked {
			if !have[id] {
				t.Errorf("round %d: acknowledged entry %s lost", round, id)
			}
		}
		// The store must still take appends after recovery.
		appendUser(t, s, fmt.Sprintf("after-%d", round))
		s.Close(ctx)
	}
}

func childAppendForever(p string) {
	s, err := filestore.Create(ctx, p, sessiontest.TestHeader("crash"), filestore.DefaultConfig())
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	sess, _ := session.New(s, sessiontest.TestConfig())
	big := strings.Repeat("payload ", 512)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		e, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(big)})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("ACK", e.ID)
	}
	os.Exit(0)
}
