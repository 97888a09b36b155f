package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session imported (or followed) from another machine goes back where
// its agent looks for it here — Claude Code's project folder for the
// mapped working directory, Codex's dated folder, pi's sessions folder —
// as the file the agent wrote, byte for byte but for the working
// directories mapped; a file there with lines this session lacks is not
// overwritten unless -force.
func TestResumePutsASessionWhereItsAgentFindsIt(t *testing.T) {
	data, home := t.TempDir(), t.TempDir()
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR"} {
		t.Setenv(k, "")
	}
	claude, err := os.ReadFile("../../transcript/testdata/claude-code/short.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "11111111-2222-4333-8444-555555555555.jsonl")
	os.WriteFile(src, claude, 0o600)
	mustRun(t, data, "", "import", src)
	out := mustRun(t, data, "", "resume", "11111111-2222-4333-8444-555555555555", "-home", home, "-map", "/home/marco/projects=/Users/m/src_x")
	want := filepath.Join(home, ".claude", "projects", "-Users-m-src-x-spotter", "11111111-2222-4333-8444-555555555555.jsonl")
	if !strings.HasPrefix(out, want+"\n") || !strings.Contains(out, "claude --resume 11111111-2222-4333-8444-555555555555") {
		t.Fatalf("resume said:\n%s\nwant the file %s", out, want)
	}
	got, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	mapped := bytes.ReplaceAll(claude, []byte(`"cwd":"/home/marco/projects/spotter"`), []byte(`"cwd":"/Users/m/src_x/spotter"`))
	if bytes.Equal(mapped, claude) || !bytes.Equal(got, mapped) {
		t.Fatalf("the file is not the original with its cwd mapped (%d bytes, want %d)", len(got), len(mapped))
	}
	if out := mustRun(t, data, "", "resume", "11111111-2222-4333-8444-555555555555", "-home", home, "-map", "/home/marco/projects=/Users/m/src_x"); !strings.Contains(out, "up to date") {
		t.Fatalf("again: %s", out)
	}
	// The agent went on here: its file is not overwritten.
	os.WriteFile(want, append(got, []byte(`{"type":"summary","summary":"local","leafUuid":"x"}`+"\n")...), 0o600)
	if code, _, stderr := runIn(t, data, "", "resume", "11111111-2222-4333-8444-555555555555", "-home", home, "-map", "/home/marco/projects=/Users/m/src_x"); code == 0 || !strings.Contains(stderr, "-force") {
		t.Fatalf("over a newer local file: exit %d %s", code, stderr)
	}
	mustRun(t, data, "", "resume", "11111111-2222-4333-8444-555555555555", "-home", home, "-force", "-map", "/home/marco/projects=/Users/m/src_x")
	if got, _ := os.ReadFile(want); !bytes.Equal(got, mapped) {
		t.Fatal("-force did not write the session")
	}

	// Codex: its dated folder, the rollout as it was.
	codex, _ := os.ReadFile(codexFixtureForResume)
	mustRun(t, data, "", "import", codexFixtureForResume)
	out = mustRun(t, data, "", "resume", "019e1625-789d-76c0-80ab-3724b5ddb799", "-home", home)
	wantCodex := filepath.Join(home, ".codex", "sessions", "2026", "05", "11", filepath.Base(codexFixtureForResume))
	if got, err := os.ReadFile(wantCodex); err != nil || !bytes.Equal(got, codex) || !strings.Contains(out, "codex resume") {
		t.Fatalf("codex: %v, %q", err, out)
	}

	// pi: --<cwd>--/<timestamp>_<id>.jsonl, the header's cwd mapped.
	mustRun(t, data, "", "new", "-id", "pi-1", "-cwd", "/old/w:x")
	mustRun(t, data, "", "append", "pi-1", "-text", "hello")
	exported := mustRun(t, data, "", "export", "pi-1")
	mustRun(t, data, "", "resume", "pi-1", "-home", home, "-map", "/old=/new")
	matches, _ := filepath.Glob(filepath.Join(home, ".pi", "agent", "sessions", "--new-w-x--", "*_pi-1.jsonl"))
	if len(matches) != 1 {
		t.Fatalf("pi: %v", matches)
	}
	got, _ = os.ReadFile(matches[0])
	if string(got) != strings.Replace(exported, `"cwd":"/old/w:x"`, `"cwd":"/new/w:x"`, 1)+"\n" {
		t.Fatalf("pi's file:\n%s\nexport:\n%s", got, exported)
	}
}

const codexFixtureForResume = "../../transcript/testdata/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
