package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentcore/sessionlog/internal/await"
)

// Every source of data the store takes — pi files of format versions 1
// to 3 from pi 0.x and 1.6, Claude Code transcripts with their subagents,
// Codex rollouts, LangGraph threads and Agents SDK sessions as their
// adapters write them, entries of types no version knows — through every
// reader: the CLI's verbs, export in every format, backup and restore,
// archive and unarchive, watch, search, every MCP tool over stdio and
// /mcp with the SDK's client, and the TypeScript and Python clients. Every pair works; what was imported exports
// byte for byte; a pi file's context is the one pi built; no text a
// session holds reaches a terminal as an escape code.
func TestEverySourceThroughEveryReader(t *testing.T) {
	if testing.Short() {
		t.Skip("the reader matrix runs every verb on every source")
	}
	dir, data := t.TempDir(), t.TempDir()
	sources := matrixSources(t, dir)
	storeSources(t, data, dir, sources)
	var done pairs
	exported := map[string]string{} // id → its pi export
	for _, s := range sources {
		t.Run("cli/"+s.name, func(t *testing.T) {
			exported[s.id] = readWithVerbs(t, data, s, &done)
		})
	}
	t.Run("ls", func(t *testing.T) {
		out := mustRun(t, data, "", "ls", "-json", "-limit", "1000")
		for _, s := range sources {
			if n := strings.Count(out, `{"id":"`+s.id+`"`); n != 1 {
				t.Errorf("ls -json lists %s %d times", s.id, n)
			}
			done.done("ls -json", s.id)
		}
		table := mustRun(t, data, "", "ls", "-limit", "1000")
		terminalSafe(t, "ls", table)
		for _, s := range sources {
			if !strings.Contains(table, s.id) {
				t.Errorf("ls lacks %s", s.id)
			}
			done.done("ls", s.id)
		}
	})
	t.Run("export pi, import again", func(t *testing.T) {
		again := t.TempDir()
		files := t.TempDir()
		for _, s := range sources {
			os.WriteFile(filepath.Join(files, s.id+".jsonl"), []byte(exported[s.id]), 0o600)
		}
		mustRun(t, again, "", "import", "-format", "pi", files)
		for _, s := range sources {
			if got, want := mustRun(t, again, "", "context", s.id), mustRun(t, data, "", "context", s.id); got != want {
				t.Errorf("%s: its pi export, imported again, has another context", s.id)
			}
			done.done("export pi → import", s.id)
		}
	})
	t.Run("backup, restore", func(t *testing.T) {
		backup, other := filepath.Join(t.TempDir(), "b"), t.TempDir()
		mustRun(t, data, "", "backup", backup)
		mustRun(t, other, "", "restore", backup)
		for _, s := range sources {
			sameSession(t, "restored", other, data, s)
			done.done("backup → restore", s.id)
		}
	})
	t.Run("archive, unarchive", func(t *testing.T) {
		arch, moved := t.TempDir(), t.TempDir()
		backup := filepath.Join(t.TempDir(), "b")
		mustRun(t, data, "", "backup", backup)
		mustRun(t, moved, "", "restore", backup)
		ids := make([]string, 0, len(sources))
		for _, s := range sources {
			ids = append(ids, s.id)
		}
		mustRun(t, moved, "", append([]string{"archive", "-delete", "-dir", arch}, ids...)...)
		if ls := mustRun(t, moved, "", "ls", "-json"); ls != "" {
			t.Fatalf("archive -delete left sessions:\n%.300s", ls)
		}
		mustRun(t, moved, "", append([]string{"unarchive", "-dir", arch}, ids...)...)
		for _, s := range sources {
			sameSession(t, "unarchived", moved, data, s)
			done.done("archive → unarchive", s.id)
		}
	})
	t.Run("watch", func(t *testing.T) { watchEverySource(t, data, sources, &done) })
	t.Run("search", func(t *testing.T) { searchEverySource(t, data, sources, &done) })
	t.Run("mcp stdio", func(t *testing.T) { mcpOverStdio(t, data, sources, &done) })
	url := servedHTTP(t, data)
	t.Run("mcp http", func(t *testing.T) { mcpOverHTTP(t, url, sources, &done) })
	t.Run("clients", func(t *testing.T) { readWithClients(t, data, url, sources, &done) })
	done.report(t, len(sources))
}

// readWithVerbs reads s with every verb that shows a session, and returns
// its pi export.
func readWithVerbs(t *testing.T, data string, s matrixSource, done *pairs) string {
	t.Helper()
	for _, args := range [][]string{{"tree", "-no-pager"}, {"tree", "-entries", "-no-pager"}, {"tree", "-branch", "-no-pager"}, {"stats"}} {
		out := mustRun(t, data, "", append([]string{args[0], s.id}, args[1:]...)...)
		terminalSafe(t, strings.Join(args, " "), out)
		done.done(strings.Join(args, " "), s.id)
	}
	var tree struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "tree", s.id, "-json")), &tree); err != nil || len(tree.Nodes) == 0 {
		t.Errorf("tree -json: %v, %d nodes", err, len(tree.Nodes))
	}
	done.done("tree -json", s.id)
	var st map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "stats", s.id, "-json")), &st); err != nil {
		t.Errorf("stats -json: %v", err)
	}
	done.done("stats -json", s.id)
	checkContext(t, s, mustRun(t, data, "", "context", s.id))
	done.done("context", s.id)

	pi := exportOf(t, data, s.id, "pi")
	if s.format == "pi" {
		sameBytes(t, "export", pi, s.file)
	}
	done.done("export pi", s.id)
	if s.format != "" && s.format != "pi" {
		sameBytes(t, "export -format "+s.format, exportOf(t, data, s.id, s.format), s.file)
	}
	for _, f := range []string{"claude-code", "codex"} {
		if f == s.format {
			continue
		}
		// A session of another format says which one it holds.
		code, _, stderr := runIn(t, data, "", "export", s.id, "-format", f, "-o", "-")
		if code == 0 || !strings.Contains(stderr, "holds") {
			t.Errorf("export -format %s of a %s session: exit %d, %s", f, s.format, code, stderr)
		}
	}
	done.done("export -format", s.id)
	html := mustRun(t, data, "", "export", s.id, "-html", "-o", "-")
	if strings.Contains(html, "<img src=x") || strings.Contains(html, "\x1b") || !strings.Contains(html, "</html>") {
		t.Errorf("export -html holds markup or escape codes a session wrote")
	}
	done.done("export -html", s.id)
	return pi
}

func exportOf(t *testing.T, data, id, format string) string {
	t.Helper()
	code, out, stderr := runIn(t, data, "", "export", id, "-format", format, "-o", "-")
	if code != 0 {
		t.Fatalf("export -format %s: exit %d: %s", format, code, stderr)
	}
	return out
}

// sameBytes fails unless got is the file's content.
func sameBytes(t *testing.T, what, got, file string) {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Errorf("%s is not the file: line %d\n got %.300s\nwant %.300s", what, i+1, g[i], w[i])
			return
		}
	}
	t.Errorf("%s is not the file: %d lines against %d", what, len(g), len(w))
}

// sameSession fails unless the session reads the same on both data dirs.
func sameSession(t *testing.T, what, got, want string, s matrixSource) {
	t.Helper()
	for _, args := range [][]string{{"export", s.id, "-o", "-"}, {"context", s.id}, {"tree", s.id, "-no-pager"}} {
		if g, w := mustRun(t, got, "", args...), mustRun(t, want, "", args...); g != w {
			t.Errorf("%s %s: %s differs", what, s.id, args[0])
		}
	}
	if s.format != "" && s.format != "pi" {
		sameBytes(t, what+" export -format "+s.format, exportOf(t, got, s.id, s.format), s.file)
	}
}

// watchEverySource reads every entry from the start of the log with
// watch, and finds each source's entries, each once.
func watchEverySource(t *testing.T, data string, sources []matrixSource, done *pairs) {
	total := 0
	want := map[string]int{}
	for _, s := range sources {
		var st struct{ Entries int }
		json.Unmarshal([]byte(mustRun(t, data, "", "stats", s.id, "-json")), &st)
		want[s.id] = st.Entries
		total += st.Entries
	}
	types := "message,custom,custom_message,compaction,branch_summary,model_change,thinking_level_change,label,session_info,x-future-entry,active_tools_change,usage,context_edit"
	wait := watchIn(t, data, "-from", "start", "-type", types, "-n", fmt.Sprint(total))
	code, out := wait()
	if code != 0 {
		t.Fatalf("watch exited %d", code)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct{ Session string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("watch printed %.200q: %v", line, err)
		}
		got[v.Session]++
	}
	for _, s := range sources {
		if got[s.id] != want[s.id] {
			t.Errorf("watch gave %d entries of %s, which holds %d", got[s.id], s.id, want[s.id])
		}
		done.done("watch", s.id)
	}
}

// searchEverySource finds, in each session, a word of its first message.
func searchEverySource(t *testing.T, data string, sources []matrixSource, done *pairs) {
	for _, s := range sources {
		word := s.word
		if word == "" {
			word = searchWord(t, data, s.id)
		}
		if word == "-" {
			// Nothing in it is text search indexes (a LangGraph thread's
			// state is its serializer's): the search works and finds none.
			var res struct{ Total *int }
			out := mustRun(t, data, "", "search", "-session", s.id, "-json", "checkpoint")
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Total == nil || *res.Total != 0 {
				t.Errorf("search in %s: %v %.300s", s.id, err, out)
			}
			done.done("search", s.id)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out string
		err := await.Until(ctx, await.Poll{First: 20 * time.Millisecond, Most: 500 * time.Millisecond}, nil, func() (bool, error) {
			// Every branch: the word is of the session's first message,
			// which a session that branched from its root has left.
			out = mustRun(t, data, "", "search", "-session", s.id, "-scope", "session", word)
			return strings.Contains(out, s.id), nil
		})
		cancel()
		if err != nil {
			t.Errorf("search for %q never found it in %s", word, s.id)
		}
		terminalSafe(t, "search", out)
		done.done("search", s.id)
	}
}

// searchWord is the longest word, letters alone, of the first user or
// assistant message shown in tree -json that has one (system prompts are
// not indexed; the summary's last word may be cut).
func searchWord(t *testing.T, data, id string) string {
	var tree struct {
		Nodes []struct{ Type, Summary string }
	}
	json.Unmarshal([]byte(mustRun(t, data, "", "tree", id, "-json")), &tree)
	for _, n := range tree.Nodes {
		if n.Type != "message" || !strings.HasPrefix(n.Summary, "user: ") && !strings.HasPrefix(n.Summary, "assistant: ") {
			continue
		}
		words := strings.Fields(n.Summary)
		best := ""
		for _, w := range words[min(1, len(words)) : max(1, len(words))-1] {
			if len(w) > len(best) && !strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLower(r) }) {
				best = w
			}
		}
		if best != "" {
			return best
		}
	}
	t.Fatalf("%s has no message to search for", id)
	return ""
}
