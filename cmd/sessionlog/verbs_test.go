package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runIn runs a verb against the embedded node on data, with stdin.
func runIn(t *testing.T, data, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if data != "" {
		args = append(args, "-data", data)
	}
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func mustRun(t *testing.T, data, stdin string, args ...string) string {
	t.Helper()
	code, out, stderr := runIn(t, data, stdin, args...)
	if code != 0 {
		t.Fatalf("sessionlog %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return strings.TrimSpace(out)
}

func TestVerbsEndToEnd(t *testing.T) {
	data := t.TempDir()
	if got := mustRun(t, data, "", "new", "-id", "s1", "-name", "first session", "-cwd", "/w"); got != "s1" {
		t.Fatalf("new printed %q", got)
	}
	u1 := mustRun(t, data, "", "append", "s1", "-text", "hello")
	a1 := mustRun(t, data, "", "append", "s1", "-role", "assistant", "-text", "hi there", "-provider", "anthropic", "-model", "claude")
	mustRun(t, data, `{"role":"user","content":[{"type":"text","text":"from stdin"}],"timestamp":5,"x-extra":1}`, "append", "s1", "-json")
	mustRun(t, data, "", "label", "s1", u1, "start")
	tree := mustRun(t, data, "", "tree", "s1")
	for _, want := range []string{"first session", "[start]", "← leaf", "from stdin"} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree lacks %q:\n%s", want, tree)
		}
	}
	ctxJSON := mustRun(t, data, "", "context", "s1")
	if !strings.Contains(ctxJSON, `"x-extra": 1`) || !strings.Contains(ctxJSON, `"provider": "anthropic"`) {
		t.Errorf("context lost fields:\n%s", ctxJSON)
	}
	mustRun(t, data, "", "move", "s1", a1, "-summary", "abandoned")
	if c := mustRun(t, data, "", "context", "s1"); !strings.Contains(c, "branchSummary") || strings.Contains(c, "from stdin") {
		t.Errorf("context after move:\n%s", c)
	}
	mustRun(t, data, "", "move", "-root", "s1")
	if c := mustRun(t, data, "", "context", "s1"); !strings.Contains(c, `"messages": []`) {
		t.Errorf("context after moving to the root:\n%s", c)
	}
	mustRun(t, data, "", "move", "s1", a1)

	forked := mustRun(t, data, "", "fork", "s1", "-before", u1, "-id", "s2")
	if forked != "s2" {
		t.Fatalf("fork printed %q", forked)
	}
	out := filepath.Join(t.TempDir(), "s1.jsonl")
	mustRun(t, data, "", "export", "s1", "-o", out)
	if got := mustRun(t, "", "", "check", out); !strings.Contains(got, "0 problem(s)") {
		t.Errorf("exported file: %s", got)
	}
	mustRun(t, data, "", "import", out, "-id", "s3")
	exported, _ := os.ReadFile(out)
	again := mustRun(t, data, "", "export", "s3")
	// The import is the same session under another id.
	if strings.Replace(again, `"id":"s3"`, `"id":"s1"`, 1) != strings.TrimSpace(string(exported)) {
		t.Errorf("import/export changed the session:\n%s\n---\n%s", again, exported)
	}
	stats := mustRun(t, data, "", "stats", "s3")
	if !strings.Contains(stats, "user       2") || !strings.Contains(stats, "assistant  1") {
		t.Errorf("stats:\n%s", stats)
	}
	ls := mustRun(t, data, "", "ls")
	for _, id := range []string{"s1", "s2", "s3"} {
		if !strings.Contains(ls, id) {
			t.Errorf("ls lacks %s:\n%s", id, ls)
		}
	}
	mustRun(t, data, "", "rm", "s2")
	if ls := mustRun(t, data, "", "ls", "-json"); strings.Contains(ls, `"id":"s2"`) {
		t.Errorf("rm left s2 listed:\n%s", ls)
	}
}

func TestVerbErrors(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "e1")
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"dotted id", "", []string{"new", "-id", "a.b"}, 1, "invalid session id"},
		{"wildcard id", "", []string{"append", ">", "-text", "x"}, 1, "invalid session id"},
		{"unknown session", "", []string{"tree", "nope"}, 1, "session not found"},
		{"existing session", "", []string{"new", "-id", "e1"}, 1, "already exists"},
		{"move to a missing entry", "", []string{"move", "e1", "zzz"}, 1, "does not exist"},
		{"label a missing entry", "", []string{"label", "e1", "zzz", "x"}, 1, "does not exist"},
		{"fork before a non-user entry", "", []string{"fork", "e1", "-before", "zzz"}, 1, "does not exist"},
		{"bad JSON on stdin", "{", []string{"append", "e1", "-json"}, 1, "malformed"},
		{"unknown role", "", []string{"append", "e1", "-role", "robot"}, 2, "unknown role"},
		{"tool result without ids", "", []string{"append", "e1", "-role", "toolResult"}, 2, "-tool-call-id"},
		{"missing import file", "", []string{"import", "/nonexistent.jsonl"}, 1, "no such file"},
		{"rm unknown", "", []string{"rm", "nope"}, 1, "session not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runIn(t, data, tt.stdin, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Errorf("error is not one line: %q", stderr)
			}
		})
	}
}

// With -files the same verbs work on a directory of pi files.
func TestVerbsOnFiles(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "", "", "new", "-id", "f1", "-files", dir)
	mustRun(t, "", "", "append", "f1", "-text", "on disk", "-files", dir)
	if tree := mustRun(t, "", "", "tree", filepath.Join(dir, "f1.jsonl")); !strings.Contains(tree, "on disk") {
		t.Fatalf("tree of the file:\n%s", tree)
	}
	if ls := mustRun(t, "", "", "ls", "-files", dir); !strings.Contains(ls, "f1") {
		t.Fatalf("ls:\n%s", ls)
	}
}

// dirSize is the bytes of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Importing a pi file with inline images stores each image once, apart
// (the same screenshot in two sessions takes its bytes once), and the
// export gives the file back byte for byte.
func TestImportOffloadsInlineImages(t *testing.T) {
	img := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	file := `{"type":"session","version":3,"id":"p1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","data":"` +
		base64.StdEncoding.EncodeToString(img) + `","mimeType":"image/png"}],"timestamp":1}}` + "\n"
	src := filepath.Join(t.TempDir(), "p1.jsonl")
	if err := os.WriteFile(src, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	grows := func(offload string) int64 {
		data := t.TempDir()
		mustRun(t, data, "", "new", "-id", "warm") // the node's own files first
		before := dirSize(t, data)
		for _, id := range []string{"i1", "i2"} {
			mustRun(t, data, "", "import", src, "-id", id, "-offload", offload)
		}
		out := filepath.Join(t.TempDir(), "out.jsonl")
		mustRun(t, data, "", "export", "i2", "-o", out, "-offload", offload)
		got, _ := os.ReadFile(out)
		if want := strings.Replace(file, `"id":"p1"`, `"id":"i2"`, 1); string(got) != want {
			t.Fatalf("export with -offload %s differs from the imported file", offload)
		}
		grew := dirSize(t, data) - before
		// The image is no longer named once both sessions are gone, but
		// kept through its grace period.
		mustRun(t, data, "", "rm", "i1")
		mustRun(t, data, "", "rm", "i2")
		out = mustRun(t, data, "", "gc")
		if offload != "0" && !strings.Contains(out, "blobs 1: 0 deleted") || !strings.Contains(out, "within the grace period of 24h0m0s") ||
			!strings.Contains(out, "\nsnapshot objects ") {
			t.Fatalf("gc with -offload %s: %s", offload, out)
		}
		return grew
	}
	inline, apart := grows("0"), grows("65536")
	t.Logf("two imports of a 1 MiB image: %d KiB inline, %d KiB offloaded", inline>>10, apart>>10)
	if apart > inline*7/10 {
		t.Fatalf("offloaded imports grew the data dir by %d KiB, inline ones by %d KiB: the image is not stored once", apart>>10, inline>>10)
	}
}

// ls filters by name, working directory, label, metadata and time, on the
// embedded node and on files alike, and says what is wrong with a filter.
func TestListFilters(t *testing.T) {
	for _, backend := range []string{"data", "files"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				if backend == "files" {
					return mustRun(t, "", "", append(args, "-files", dir)...)
				}
				return mustRun(t, dir, "", args...)
			}
			run("new", "-id", "a", "-name", "Parser fixes", "-cwd", "/w/app")
			run("new", "-id", "b", "-name", "docs", "-cwd", "/w/app/docs")
			run("new", "-id", "c", "-name", "parser speed", "-cwd", "/w/other")
			e := run("append", "b", "-text", "keep this")
			run("label", "b", e, "keep")
			ids := func(args ...string) string {
				t.Helper()
				var got []string
				for _, line := range strings.Split(run(append([]string{"ls", "-json"}, args...)...), "\n") {
					if i := strings.Index(line, `"id":"`); i >= 0 {
						got = append(got, strings.SplitN(line[i+6:], `"`, 2)[0])
					}
				}
				slices.Sort(got)
				return strings.Join(got, ",")
			}
			for _, tt := range []struct {
				args []string
				want string
			}{
				{nil, "a,b,c"},
				{[]string{"-name", "PARSER"}, "a,c"},
				{[]string{"-cwd", "/w/app"}, "a,b"},
				{[]string{"-label", "keep"}, "b"},
				{[]string{"-label", "keep", "-name", "parser"}, ""},
				{[]string{"-since", "2000-01-01", "-until", "1h"}, ""},
				{[]string{"-since", "2000-01-01"}, "a,b,c"},
			} {
				if got := ids(tt.args...); got != tt.want {
					t.Errorf("ls %v: %q, want %q", tt.args, got, tt.want)
				}
			}
			for _, bad := range [][]string{{"-since", "yesterday"}, {"-meta", "novalue"}, {"-since", "2025-01-02", "-until", "2025-01-01"}} {
				args := append([]string{"ls"}, bad...)
				if backend == "files" {
					args = append(args, "-files", dir)
				} else {
					args = append(args, "-data", dir)
				}
				code, _, stderr := runIn(t, "", "", args...)
				if code != 2 || !strings.Contains(stderr, bad[0]) && !strings.Contains(stderr, strings.TrimPrefix(bad[0], "-")) {
					t.Errorf("ls %v: exit %d, %q; want 2 naming %s", bad, code, stderr, bad[0])
				}
			}
		})
	}
}

// export -html writes a page with the session's messages, escaped.
func TestExportHTMLVerb(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "h1", "-name", "html please")
	mustRun(t, data, "", "append", "h1", "-text", "<b>not bold</b>")
	out := filepath.Join(t.TempDir(), "h1.html")
	mustRun(t, data, "", "export", "-html", "h1", "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if page := string(b); !strings.Contains(page, "<title>html please") || !strings.Contains(page, "&lt;b&gt;not bold&lt;/b&gt;") {
		t.Fatalf("export -html:\n%s", page)
	}
}

// append -entry takes pi entries of any type on stdin, completed and
// checked as the service does; append with nothing to append is refused.
func TestAppendEntries(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "a1")
	u := mustRun(t, data, "", "append", "a1", "-text", "hello")
	lines := strings.Join([]string{
		`{"type":"model_change","provider":"anthropic","modelId":"claude-x"}`,
		`{"type":"thinking_level_change","thinkingLevel":"high"}`,
		`{"type":"custom","customType":"my-ext","data":{"k":1}}`,
		`{"type":"custom_message","customType":"note","content":"shown to the model","display":true}`,
		`{"type":"compaction","summary":"we said hello","firstKeptEntryId":"` + u + `","tokensBefore":10}`,
	}, "\n")
	ids := strings.Fields(mustRun(t, data, lines, "append", "a1", "-entry"))
	if len(ids) != 5 {
		t.Fatalf("append -entry printed %q", ids)
	}
	mustRun(t, data, `{"type":"branch_summary","summary":"left it","fromId":"`+ids[4]+`"}`, "append", "a1", "-entry")
	tree := mustRun(t, data, "", "tree", "a1", "-entries")
	for _, want := range []string{"model → anthropic/claude-x", "thinking → high", "custom my-ext", "custom message note", "compaction (10 tokens)", "branch summary: left it"} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree lacks %s:\n%s", want, tree)
		}
	}
	if c := mustRun(t, data, "", "context", "a1"); !strings.Contains(c, "we said hello") || !strings.Contains(c, "shown to the model") {
		t.Errorf("context:\n%s", c)
	}
	for _, tt := range []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"no text", "", []string{"append", "a1"}, 2, "nothing to append"},
		{"empty text", "", []string{"append", "a1", "-text", ""}, 2, "nothing to append"},
		{"both stdin modes", "{}", []string{"append", "a1", "-json", "-entry"}, 2, "give one"},
		{"no entries", "  \n", []string{"append", "a1", "-entry"}, 2, "no entries"},
		{"a type that is no name", `{"type":"tele.pathy"}`, []string{"append", "a1", "-entry"}, 1, "is not a type name"},
		{"an edit of a missing entry", `{"type":"context_edit","targetId":"nosuch","replacement":null}`, []string{"append", "a1", "-entry"}, 1, "does not exist"},
		{"an edit without replacement", `{"type":"context_edit","targetId":"` + u + `"}`, []string{"append", "a1", "-entry"}, 1, "replacement"},
		{"a usage entry without usage", `{"type":"usage","kind":"k","provider":"p","model":"m"}`, []string{"append", "a1", "-entry"}, 1, "usage"},
		{"a header", `{"type":"session","version":3,"id":"x"}`, []string{"append", "a1", "-entry"}, 1, "not an entry"},
		{"member twice", `{"type":"custom","customType":"a","customType":"b"}`, []string{"append", "a1", "-entry"}, 1, "line 1"},
		{"bad field", `{"type":"thinking_level_change","thinkingLevel":"max"}`, []string{"append", "a1", "-entry"}, 1, "thinkingLevel"},
		{"second line bad", "{\"type\":\"custom\",\"customType\":\"a\"}\n{oops", []string{"append", "a1", "-entry"}, 1, "line 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := mustRun(t, data, "", "stats", "a1")
			code, _, stderr := runIn(t, data, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
			if after := mustRun(t, data, "", "stats", "a1"); after != before {
				t.Fatalf("a refused append changed the session:\n%s\n%s", before, after)
			}
		})
	}
}

// append -entry takes pi 1.6's usage and context_edit entries and entries
// of types sessionlog does not know: kept byte for byte (export), the
// edit applied to the context, the unknown type leaving it alone.
func TestAppendEntriesOfPi16(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "p1")
	u := mustRun(t, data, "", "append", "p1", "-text", "hello")
	lines := []string{
		`{"type":"usage","id":"us1","parentId":"` + u + `","timestamp":"2026-01-01T00:00:00.000Z","kind":"cache_warm","provider":"anthropic","model":"claude-x","usage":{"input":5,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":5,"cost":{"input":0.01,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.01}},"note":"kept warm"}`,
		`{"type":"some_future_type","id":"fu1","parentId":"us1","timestamp":"2026-01-01T00:00:01.000Z","zeta":{"b":1,"a":[true,null]},"alpha":"x"}`,
		`{"type":"context_edit","id":"ed1","parentId":"fu1","timestamp":"2026-01-01T00:00:02.000Z","targetId":"` + u + `","replacement":{"content":"hello (edited)"}}`,
	}
	mustRun(t, data, strings.Join(lines, "\n"), "append", "p1", "-entry")
	out := mustRun(t, data, "", "export", "p1")
	got := strings.Split(out, "\n")
	for _, l := range lines {
		if !slices.Contains(got, l) {
			t.Errorf("export lacks, byte for byte:\n%s\nin\n%s", l, out)
		}
	}
	tree := mustRun(t, data, "", "tree", "p1", "-entries")
	for _, want := range []string{"usage cache_warm anthropic/claude-x (5 tokens) kept warm", "context edit of " + u + ": hello (edited)", "fu1 some_future_type"} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree lacks %q:\n%s", want, tree)
		}
	}
	c := mustRun(t, data, "", "context", "p1")
	if !strings.Contains(c, "hello (edited)") || strings.Contains(c, "some_future_type") {
		t.Errorf("context after the edit:\n%s", c)
	}
	mustRun(t, data, `{"type":"context_edit","targetId":"`+u+`","replacement":null}`, "append", "p1", "-entry")
	if c := mustRun(t, data, "", "context", "p1"); strings.Contains(c, "hello") {
		t.Errorf("context after an edit that removes the message:\n%s", c)
	}
}
