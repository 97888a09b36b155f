package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommands are the `./sessionlog …` lines of the README's tour and
// of the command line's block (docs/cli.md, under "The binary"), in that
// order, comments and optional [parts] taken off.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, src := range []struct{ file, heading string }{{"../../README.md", "## A five-minute tour"}, {"../../docs/cli.md", "## The binary"}} {
		b, err := os.ReadFile(src.file)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, src.heading)
		if i < 0 {
			t.Fatalf("%s has no %q", src.file, src.heading)
		}
		s = s[i+len(src.heading):]
		if j := strings.Index(s, "\n## "); j >= 0 {
			s = s[:j]
		}
		n := len(out)
		optional := regexp.MustCompile(`\s*\[[^\]]*\]`)
		for _, block := range fencedBlocks(s, "sh") {
			for _, line := range strings.Split(block, "\n") {
				if !strings.HasPrefix(line, "./sessionlog ") {
					continue
				}
				if k := strings.Index(line, "  #"); k >= 0 {
					line = line[:k]
				}
				line = optional.ReplaceAllString(strings.TrimSpace(line), "")
				out = append(out, strings.ReplaceAll(line, "…", ""))
			}
		}
		if len(out) == n {
			t.Fatalf("no commands under %q in %s", src.heading, src.file)
		}
	}
	return out
}

// fencedBlocks are the bodies of s's ```lang blocks.
func fencedBlocks(s, lang string) []string {
	var out []string
	for {
		i := strings.Index(s, "```"+lang+"\n")
		if i < 0 {
			return out
		}
		s = s[i+len(lang)+4:]
		j := strings.Index(s, "\n```")
		if j < 0 {
			return out
		}
		out = append(out, s[:j])
		s = s[j+4:]
	}
}

// words splits a command line as a shell would: blanks, and "quoted" or
// 'quoted' strings kept whole (the other quote inside one is a character).
func words(line string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	any := false
	for _, r := range line {
		switch {
		case quote == 0 && (r == '"' || r == '\''):
			quote, any = r, true
		case r == quote:
			quote = 0
		case (r == ' ' || r == '\t') && quote == 0:
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

// Every command of the README's block runs as written, on one data dir
// and in order, with its placeholders (ID, ENTRY, SEQ, files and dirs)
// filled in; only those that run until interrupted (serve, watch) or for
// minutes (bench) are left out.
func TestREADMECommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 25 {
		t.Fatalf("only %d commands found in the README", len(cmds))
	}
	data, tmp := t.TempDir(), t.TempDir()
	vars := map[string]string{
		"DIR": filepath.Join(tmp, "backup"), "PREVDIR": "", "NEWID": "imported", "NEW": "unarchived",
		"s.jsonl": filepath.Join(tmp, "s.jsonl"), "s.html": filepath.Join(tmp, "s.html"),
	}
	os.WriteFile(filepath.Join(tmp, "entries.jsonl"), []byte(`{"type":"custom","customType":"readme","data":{"ok":true}}`+"\n"), 0o600)
	// A home with a Claude Code project and a Codex rollout, for import,
	// export -format and follow.
	home := t.TempDir()
	t.Setenv("HOME", home)
	const uuid = "0f0f0f0f-1111-4222-8333-444455556666"
	claude, codex := filepath.Join(home, ".claude", "projects"), filepath.Join(home, ".codex", "sessions")
	copyFile(t, "../../transcript/testdata/claude-code/short.jsonl", filepath.Join(claude, "-w", uuid+".jsonl"))
	copyFile(t, "../../transcript/testdata/codex/sample_codex_session.jsonl", filepath.Join(codex, "2025", "12", "28", "rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905.jsonl"))
	vars["~/.claude/projects"], vars["~/.codex/sessions"], vars["UUID"], vars["t.jsonl"] = claude, codex, uuid, filepath.Join(tmp, "t.jsonl")
	ran := 0
	for _, c := range cmds {
		args := words(strings.TrimPrefix(c, "./sessionlog "))
		verb := args[0]
		if verb == "serve" || verb == "watch" || verb == "bench" {
			continue
		}
		stdin := ""
		var filled []string
		for k := 0; k < len(args); k++ {
			a := args[k]
			switch {
			case a == "<":
				b, _ := os.ReadFile(filepath.Join(tmp, args[k+1]))
				stdin, k = string(b), k+1
				continue
			case verb == "rm" && a == "ID":
				a = vars["NEWID"] // the imported copy: the rest still use ID
			case verb == "archive" && a == "-delete", verb == "backup" && a == "-base":
				continue
			case verb == "restore" && a == "DIR":
				a = vars["DIR"]
			case vars[a] != "":
				a = vars[a]
			}
			filled = append(filled, a)
		}
		dir := data
		switch verb {
		case "restore":
			dir = t.TempDir() // a deployment holding none of the backup's sessions
		case "check":
			dir = "" // a file, not the data dir
		}
		switch verb {
		case "archive", "unarchive":
			filled = append(filled, "-dir", filepath.Join(tmp, "archive"))
		case "import":
			if !strings.Contains(c, "~") {
				filled = append(filled, "-id", vars["NEWID"]) // the session itself is still here
			}
		case "follow":
			filled = append(filled, "-once")
		}
		if verb == "unarchive" {
			filled = append(filled, "-id", vars["NEW"])
		}
		code, out, stderr := runIn(t, dir, stdin, filled...)
		if code != 0 {
			t.Fatalf("README: %s\nran: sessionlog %s\nexit %d: %s", c, strings.Join(filled, " "), code, stderr)
		}
		out = strings.TrimSpace(out)
		switch {
		case verb == "new":
			vars["ID"], vars["ENTRY"] = out, "" // the entry placeholders are this session's
		case verb == "append" && vars["ENTRY"] == "" && strings.Contains(c, "-text"):
			vars["ENTRY"] = out
		case verb == "append" && strings.Contains(c, "-seq"):
			vars["SEQ"] = strings.Fields(out)[1]
		}
		ran++
	}
	if ran < 25 {
		t.Fatalf("ran %d of the README's commands", ran)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
