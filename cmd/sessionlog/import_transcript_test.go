package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claude Code's and Codex's files go into the embedded store as they are
// found on disk — a project's directory with its subagents, a rollout —
// and come back out byte for byte; a subagent is a session linked to its
// main one.
func TestImportTranscriptsAndExportThemBack(t *testing.T) {
	data, home := t.TempDir(), t.TempDir()
	const main = "4d5611e5-241a-462a-8d15-5122611a9569"
	project := filepath.Join(home, ".claude", "projects", "-home-USER-projects-spotter")
	rollouts := filepath.Join(home, ".codex", "sessions", "2026", "05", "11")
	const rollout = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
	files := map[string]string{
		filepath.Join(project, main+".jsonl"):                                    "claude-code/" + main + ".jsonl",
		filepath.Join(project, main, "subagents", "agent-a2898e3.jsonl"):         "claude-code/" + main + "/subagents/agent-a2898e3.jsonl",
		filepath.Join(project, main, "subagents", "agent-acompact-e1f845.jsonl"): "claude-code/" + main + "/subagents/agent-acompact-e1f845.jsonl",
		filepath.Join(rollouts, rollout):                                         "codex/" + rollout,
	}
	for dst, src := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", "transcript", "testdata", src))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(dst), 0o700)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A session with an image, which the store keeps apart as a blob.
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfa, 0x11, 0x3c}, 200_000))
	withImage := filepath.Join(project, "0b0e7a1c-0000-4000-8000-000000000001.jsonl")
	os.WriteFile(withImage, []byte(fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"0b0e7a1c-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","message":{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%s"}}]}}`+"\n", img)), 0o600)

	code, out, stderr := runIn(t, data, "", "import", filepath.Join(home, ".claude", "projects"), filepath.Join(home, ".codex", "sessions"))
	if code != 0 || !strings.Contains(stderr, "imported 5 of 5 sessions") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, stderr)
	}
	ids := map[string]string{
		main:                                   filepath.Join(project, main+".jsonl"),
		main + "_agent-a2898e3":                filepath.Join(project, main, "subagents", "agent-a2898e3.jsonl"),
		main + "_agent-acompact-e1f845":        filepath.Join(project, main, "subagents", "agent-acompact-e1f845.jsonl"),
		"019e1625-789d-76c0-80ab-3724b5ddb799": filepath.Join(rollouts, rollout),
		"0b0e7a1c-0000-4000-8000-000000000001": withImage,
	}
	for id, file := range ids {
		format := "claude-code"
		if strings.Contains(file, ".codex") {
			format = "codex"
		}
		exported := filepath.Join(t.TempDir(), "back.jsonl")
		mustRun(t, data, "", "export", id, "-format", format, "-o", exported)
		want, _ := os.ReadFile(file)
		got, _ := os.ReadFile(exported)
		if string(got) != string(want) {
			t.Errorf("%s: the export is not the file (%d bytes against %d)", id, len(got), len(want))
		}
	}
	// The subagent names its session; the main session's context starts
	// at its compaction; exporting as the other format says why not.
	if h := mustRun(t, data, "", "export", main+"_agent-a2898e3"); !strings.Contains(firstLine(h), `"parentSession":"`+main+`"`) {
		t.Errorf("the subagent's header: %s", firstLine(h))
	}
	if ctx := mustRun(t, data, "", "context", main); !strings.Contains(ctx, "compactionSummary") || !strings.Contains(ctx, "This session is being continued") {
		t.Errorf("the context lacks the compaction's summary")
	}
	// tree shows the conversation as Claude Code showed it: no row of
	// progress lines, a call with its result, no branch it did not have;
	// -entries shows every entry.
	tree := mustRun(t, data, "", "tree", main, "-no-pager")
	if n := strings.Count(tree, "\n"); n > 300 || strings.Contains(tree, "claude-code/progress:") || !strings.Contains(tree, "→ Bash(bd show spotter-dov.1) (1 result)") ||
		!strings.Contains(tree, "0 branches") || strings.Contains(tree, "\n  ") {
		t.Errorf("tree of a Claude Code session (%d lines):\n%s", n, tree)
	}
	if all := mustRun(t, data, "", "tree", main, "-entries", "-no-pager"); !strings.Contains(all, "custom claude-code/progress") {
		t.Errorf("tree -entries shows no progress line")
	}
	if code, _, stderr := runIn(t, data, "", "export", main, "-format", "codex"); code != 1 || !strings.Contains(stderr, "holds no lines of that format") {
		t.Errorf("export as codex: exit %d: %s", code, stderr)
	}
}

// A session file given alone brings its subagents.
func TestImportOfOneClaudeSessionBringsItsSubagents(t *testing.T) {
	data, project := t.TempDir(), t.TempDir()
	const main = "4d5611e5-241a-462a-8d15-5122611a9569"
	src := filepath.Join("..", "..", "transcript", "testdata", "claude-code")
	for _, f := range []string{main + ".jsonl", main + "/subagents/agent-a2898e3.jsonl", main + "/subagents/agent-acompact-e1f845.jsonl"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(project, f))
	}
	code, out, stderr := runIn(t, data, "", "import", filepath.Join(project, main+".jsonl"))
	if code != 0 || !strings.Contains(stderr, "imported 3 of 3 sessions") || !strings.Contains(out, main+"_agent-a2898e3\t") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, stderr)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The command line on real folders, as a new user meets it: a user of one
// agent has no ~/.codex/sessions; a folder of files all refused is not a
// success; a mistyped -data is not an empty store; -o - is stdout; an
// export in the wrong format names the one the session holds.
func TestCommandLineOnRealFolders(t *testing.T) {
	data, home := t.TempDir(), t.TempDir()
	codex := filepath.Join(home, ".codex", "sessions")
	copyFile(t, filepath.Join("..", "..", "transcript", "testdata", "codex", "numbers.jsonl"), filepath.Join(codex, "rollout-a.jsonl"))
	missing := filepath.Join(home, ".claude", "projects")

	code, out, stderr := runIn(t, data, "", "import", missing, codex)
	if code != 0 || !strings.Contains(out, "019b64e5-57fa-7463-b644-fba7e456f905\t") || !strings.Contains(stderr, missing+": no such file or directory, passed over") {
		t.Fatalf("import with one folder missing: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := runIn(t, data, "", "import", missing, missing+"2"); code != 1 || !strings.Contains(stderr, "no such file or directory: "+missing) {
		t.Errorf("import of folders none of which exists: exit %d: %s", code, stderr)
	}
	refused := t.TempDir()
	os.WriteFile(filepath.Join(refused, "a.jsonl"), []byte("not json\n"), 0o600)
	os.WriteFile(filepath.Join(refused, "b.jsonl"), []byte("{\"neither\":1}\n"), 0o600)
	if code, _, stderr := runIn(t, data, "", "import", refused); code != 1 || !strings.Contains(stderr, "no session imported") || !strings.Contains(stderr, "a.jsonl") {
		t.Errorf("import of a folder whose files are all refused: exit %d: %s", code, stderr)
	}
	nowhere := filepath.Join(home, "mistyped")
	if code, out, stderr := runIn(t, nowhere, "", "ls"); code != 1 || out != "" || !strings.Contains(stderr, nowhere+" holds no store") {
		t.Errorf("ls on a dir with no store: exit %d, %q: %s", code, out, stderr)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, _ = runIn(t, data, "", "export", "019b64e5-57fa-7463-b644-fba7e456f905", "-o", "-")
	if _, err := os.Stat(filepath.Join(dir, "-")); code != 0 || !strings.HasPrefix(out, `{"type":"session"`) || err == nil {
		t.Errorf("export -o -: exit %d, stdout %.40q, a file named - made: %v", code, out, err == nil)
	}
	if code, _, stderr := runIn(t, data, "", "export", "019b64e5-57fa-7463-b644-fba7e456f905", "-format", "claude-code"); code != 1 || !strings.Contains(stderr, "it holds codex lines: export it with -format codex") {
		t.Errorf("export of a Codex import as claude-code: exit %d: %s", code, stderr)
	}
}
