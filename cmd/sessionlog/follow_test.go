package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The user unit in deploy/ runs as written: its command line, with a home
// of the test's, follows a Claude Code project into the embedded node,
// and what it took in exports back as the file. Run again, it appends
// nothing twice.
func TestFollowUnitRuns(t *testing.T) {
	home := t.TempDir()
	exec := unitExecStart(t, "../../deploy/systemd/sessionlog-follow.service")
	args := strings.Fields(strings.ReplaceAll(exec, "%h", home))
	if len(args) < 2 || filepath.Base(args[0]) != "sessionlog" || args[1] != "follow" {
		t.Fatalf("ExecStart %q", exec)
	}
	const id = "0f0f0f0f-1111-4222-8333-444455556666"
	data, err := os.ReadFile("../../transcript/testdata/claude-code/subagent.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, ".claude", "projects", "-w")
	os.MkdirAll(project, 0o700)
	os.WriteFile(filepath.Join(project, id+".jsonl"), data, 0o600)
	for range 2 {
		code, _, stderr := runIn(t, "", "", append(args[1:], "-once")...)
		if code != 0 {
			t.Fatalf("follow: exit %d: %s", code, stderr)
		}
	}
	dataDir := filepath.Join(home, ".local", "share", "sessionlog")
	out := filepath.Join(t.TempDir(), "back.jsonl")
	mustRun(t, dataDir, "", "export", id, "-format", "claude-code", "-o", out)
	if back, _ := os.ReadFile(out); string(back) != string(data) {
		t.Fatalf("the followed session exports as %d bytes, the file is %d", len(back), len(data))
	}
	if _, err := os.Stat(filepath.Join(dataDir, "follow-state.json")); err != nil {
		t.Fatalf("no state kept: %v", err)
	}
}

// unitExecStart is a systemd unit's ExecStart line.
func unitExecStart(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ExecStart="); ok {
			return v
		}
	}
	t.Fatalf("%s has no ExecStart", path)
	return ""
}
