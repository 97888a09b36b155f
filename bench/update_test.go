package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// UpdateLastRun replaces what lies between the markers, and only that; a
// file without them, or with them twice, is refused and left as it was.
func TestUpdateLastRun(t *testing.T) {
	r := &Report{Started: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), Machine: "test machine", Took: time.Minute}
	r.add(Row{Group: "a group", Name: "a row", Ours: 2, Base: 1, Unit: "ms", BaseName: "a baseline"})
	dir := t.TempDir()
	path := filepath.Join(dir, "B.md")
	before := "# B\n\nintro\n\n## Last run\n\n" + lastRunBegin + "\nold tables\n" + lastRunEnd + "\n\n## After\n\nkept\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the section it writes can be written again
		if err := UpdateLastRun(path, r, "go run ./cmd/sessionlog bench -only x"); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	s := string(got)
	for _, want := range []string{"# B\n\nintro\n\n## Last run\n\n" + lastRunBegin, "Written by `go run ./cmd/sessionlog bench -only x`", "### a group", "| a row | 2.00 ms |", lastRunEnd + "\n\n## After\n\nkept\n"} {
		if !strings.Contains(s, want) {
			t.Fatalf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "old tables") || strings.Count(s, "### a group") != 1 {
		t.Fatalf("the old section stays, or the new one is there twice:\n%s", s)
	}
	for _, bad := range []string{"# no markers\n", lastRunEnd + "\n" + lastRunBegin + "\n", lastRunBegin + lastRunBegin + lastRunEnd} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := UpdateLastRun(path, r, "x"); err == nil {
			t.Fatalf("%q: updated", bad)
		}
		if after, _ := os.ReadFile(path); string(after) != bad {
			t.Fatalf("%q: changed to %q", bad, after)
		}
	}
}
