package lifecycle_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// jsRepo is a JetStream repository of the test's own.
func jsRepo(t *testing.T) *stream.Backend {
	t.Helper()
	return repos(t)["jetstream"].(*stream.Backend)
}

// prefixDigests is the digests of a session's first n entries, as it is
// now: what a backup cut after n entries must hold.
func prefixDigests(t *testing.T, repo session.Repo, id string, n int) lifecycle.Digests {
	t.Helper()
	ctx := context.Background()
	st, err := repo.Open(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	h, _ := st.Header(ctx)
	es, err := st.Entries(ctx)
	if err != nil || len(es) < n {
		t.Fatalf("%s: %d entries (%v), the backup has %d", id, len(es), err, n)
	}
	tr := session.NewTree(h)
	for _, e := range es[:n] {
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	d, err := lifecycle.DigestsOf(tr)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A backup taken while writers append restores, into another deployment,
// sessions each equal to its state at its cut — a prefix of what it holds
// now — and no session made after; an incremental backup writes only
// what changed and restores the same way.
func TestBackupUnderLoadRestores(t *testing.T) {
	ctx := context.Background()
	src := jsRepo(t)
	const sessions = 12
	big := strings.Repeat("image-sized content ", 200) // stored apart (over 1 KiB)
	for i := range sessions {
		st, err := src.Create(ctx, session.Header{ID: fmt.Sprintf("b%02d", i), Timestamp: "2026-12-03T00:00:00.000Z"})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := session.New(st, system.Config())
		if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(big), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
	}
	// Writers append to every session while the backup runs.
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var appended atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for k := 0; wctx.Err() == nil; k++ {
				id := fmt.Sprintf("b%02d", (w*3+k)%sessions)
				st, err := src.Open(wctx, id)
				if err != nil {
					continue
				}
				s, _ := session.New(st, system.Config())
				if _, err := s.AppendMessage(wctx, session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "p", Model: "m", StopReason: "stop"}, Content: session.TextContent(fmt.Sprintf("w%d k%d", w, k)), Timestamp: 2}); err == nil {
					appended.Add(1)
				}
				st.Close(ctx)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let the writers get going
	dir := filepath.Join(t.TempDir(), "full")
	m, err := lifecycle.Backup(ctx, src, dir, lifecycle.BackupOptions{})
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Sessions) != sessions || appended.Load() == 0 {
		t.Fatalf("backup of %d sessions while %d appends landed", len(m.Sessions), appended.Load())
	}
	late, err := src.Create(ctx, session.Header{ID: "late", Timestamp: "2026-12-03T00:00:00.000Z"})
	if err != nil {
		t.Fatal(err)
	}
	late.Close(ctx)
	changed := map[string]bool{"late": true, "b03": true} // what the incremental backup must write
	moved := 0
	for _, s := range m.Sessions {
		if got := prefixDigests(t, src, s.ID, s.Entries); got != s.Digests {
			t.Fatalf("%s: the backup is not the session's first %d entries", s.ID, s.Entries)
		}
		if n, _ := entriesOf(ctx, src, s.ID); n > s.Entries {
			moved++
			changed[s.ID] = true
		}
	}
	if moved == 0 {
		t.Fatal("no session grew after its cut: the load did not overlap the backup")
	}

	dst := jsRepo(t)
	rep, err := lifecycle.Restore(ctx, dst, dir)
	if err != nil || rep.Sessions != sessions {
		t.Fatalf("restore: %+v, %v", rep, err)
	}
	for _, s := range m.Sessions {
		if got, err := lifecycle.DigestsIn(ctx, dst, s.ID); err != nil || got != s.Digests {
			t.Fatalf("%s restored: %+v (%v), want %+v", s.ID, got, err, s.Digests)
		}
	}
	if st, err := dst.Open(ctx, "late"); err == nil {
		st.Close(ctx)
		t.Fatal("a session made after the backup was restored")
	}
	// Into a deployment that holds the sessions already: refused.
	if _, err := lifecycle.Restore(ctx, dst, dir); !errors.Is(err, session.ErrSessionExists) {
		t.Fatalf("restore over itself: %v", err)
	}

	// Incremental: one session changes; only it is written.
	st, _ := src.Open(ctx, "b03")
	s, _ := session.New(st, system.Config())
	if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("after the full backup"), Timestamp: 3}); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	inc := filepath.Join(filepath.Dir(dir), "inc")
	m2, err := lifecycle.Backup(ctx, src, inc, lifecycle.BackupOptions{Base: dir})
	if err != nil {
		t.Fatal(err)
	}
	written, _ := filepath.Glob(filepath.Join(inc, "sessions", "*.jsonl.gz"))
	if len(written) != len(changed) || len(m2.Sessions) != sessions+1 {
		t.Fatalf("incremental backup wrote %d archives for %d sessions, want the %d changed since the full one", len(written), len(m2.Sessions), len(changed))
	}
	for _, w := range written {
		if !changed[strings.TrimSuffix(filepath.Base(w), ".jsonl.gz")] {
			t.Fatalf("the incremental backup wrote %s, unchanged since the full one", w)
		}
	}
	dst2 := jsRepo(t)
	if _, err := lifecycle.Restore(ctx, dst2, inc); err != nil {
		t.Fatal(err)
	}
	for _, s := range m2.Sessions {
		if got, err := lifecycle.DigestsIn(ctx, dst2, s.ID); err != nil || got != s.Digests {
			t.Fatalf("%s restored from the incremental backup: %v", s.ID, err)
		}
	}
}

func entriesOf(ctx context.Context, repo session.Repo, id string) (int, error) {
	st, err := repo.Open(ctx, id)
	if err != nil {
		return 0, err
	}
	defer st.Close(ctx)
	es, err := st.Entries(ctx)
	return len(es), err
}

// A damaged backup — one archive changed, missing, or the manifest — is
// refused before anything is restored, naming the file.
func TestDamagedBackupRestoresNothing(t *testing.T) {
	ctx := context.Background()
	src := repos(t)["files"]
	loadSamples(t, src, "bk")
	dir := filepath.Join(t.TempDir(), "b")
	m, err := lifecycle.Backup(ctx, src, dir, lifecycle.BackupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "sessions", m.Sessions[len(m.Sessions)-1].ID+".jsonl.gz")
	good, _ := os.ReadFile(victim)
	goodM, _ := os.ReadFile(filepath.Join(dir, "backup.json"))
	for name, damage := range map[string]func(){
		"a flipped byte":   func() { b := bytes.Clone(good); b[len(b)/3] ^= 1; os.WriteFile(victim, b, 0o600) },
		"an archive gone":  func() { os.Remove(victim) },
		"manifest damaged": func() { os.WriteFile(filepath.Join(dir, "backup.json"), goodM[:len(goodM)/2], 0o600) },
		"manifest missing": func() { os.Remove(filepath.Join(dir, "backup.json")) },
		"a newer release's manifest": func() {
			os.WriteFile(filepath.Join(dir, "backup.json"), regexp.MustCompile(`"version": ?1`).ReplaceAll(goodM, []byte(`"version":2`)), 0o600)
		},
	} {
		os.WriteFile(victim, good, 0o600)
		os.WriteFile(filepath.Join(dir, "backup.json"), goodM, 0o600)
		damage()
		dst := repos(t)["files"]
		_, err := lifecycle.Restore(ctx, dst, dir)
		if !errors.Is(err, lifecycle.ErrBadArchive) || !(strings.Contains(err.Error(), filepath.Base(victim)) || strings.Contains(err.Error(), "backup.json")) {
			t.Errorf("%s: %v", name, err)
		}
		if newer := strings.Contains(name, "newer"); newer != errors.Is(err, session.ErrNewerFormat) {
			t.Errorf("%s: %v; a newer format is ErrNewerFormat, and nothing else is", name, err)
		}
		if page, err := dst.List(ctx, session.ListOptions{}); err != nil || len(page.Sessions) != 0 {
			t.Errorf("%s: %d sessions restored (%v)", name, len(page.Sessions), err)
		}
	}
}
