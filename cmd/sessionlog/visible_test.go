package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// hostile is stored text that would act on a terminal printed as it is:
// an OSC setting the window title, a screen clear, a carriage return
// over the line, a C1 CSI and a bidirectional override.
const hostile = "hi \x1b]0;pwned\a\x1b[2J\rthere \u009b31m \u202e evil"

// hazardIn is the first rune of out that would act on a terminal.
func hazardIn(out string) (rune, bool) {
	for _, r := range out {
		if outline.Hazard(r) {
			return r, true
		}
	}
	return 0, false
}

// Every verb that prints what sessions hold — as text or as JSON — shows
// escape codes and bidirectional controls instead of letting them act on
// the terminal, and JSON stays the same values. Before, context and
// watch printed the override as it is, and file names of an import its
// escape codes.
func TestVerbsPrintNoTerminalEscapes(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "e", "-name", hostile, "-cwd", "/x"+hostile)
	id := mustRun(t, data, "", "append", "e", "-text", hostile)
	mustRun(t, data, "", "label", "e", id, hostile)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad\x1b[2J\u202e.jsonl")
	if err := os.WriteFile(bad, []byte(sessiontest.Lines(sessiontest.HeaderLine, "not json "+hostile)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tree", "e"}, {"tree", "e", "-entries"}, {"tree", "e", "-branch"}, {"tree", "e", "-json"},
		{"context", "e"}, {"stats", "e"}, {"stats", "e", "-json"}, {"ls"}, {"ls", "-json"},
		{"search", "hi"}, {"search", "hi", "-json"}, {"watch", "-from", "0", "-limit", "4"},
		{"check", bad}, {"import", dir}, {"tree", "no-such-" + hostile},
	} {
		_, out, stderr := runIn(t, data, "", args...)
		for what, s := range map[string]string{"stdout": out, "stderr": stderr} {
			if r, ok := hazardIn(s); ok {
				t.Errorf("%s: %s holds %U as it is:\n%q", strings.Join(args, " "), what, r, s)
			}
		}
		if strings.HasSuffix(args[len(args)-1], "-json") || args[0] == "context" {
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("%s: not JSON any more: %v", strings.Join(args, " "), err)
			} else if b, _ := json.Marshal(v); args[0] == "context" && !strings.Contains(string(b), `\u001b]0;pwned`) {
				t.Errorf("context lost the stored text: %s", b)
			}
		}
	}
}

// A rune split across writes is held, not mangled; a hazard becomes its
// \u escape (a surrogate pair above the BMP), invalid UTF-8 U+FFFD.
func TestVisibleWriter(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain é ✓ text\n\ttab", "plain é ✓ text\n\ttab"},
		{"a\x1b[2Jb", `a\u001b[2Jb`},
		{"\r\u202e\u009b", `\u000d\u202e\u009b`},
		{"bad \xff byte", "bad \uFFFD byte"},
	} {
		for split := range len(c.in) + 1 {
			var buf bytes.Buffer
			v := newVisibleWriter(&buf)
			v.Write([]byte(c.in[:split]))
			v.Write([]byte(c.in[split:]))
			v.Flush()
			if buf.String() != c.want {
				t.Fatalf("%q split at %d: %q, want %q", c.in, split, buf.String(), c.want)
			}
			if !utf8.Valid(buf.Bytes()) {
				t.Fatalf("%q: invalid UTF-8 out", c.in)
			}
		}
	}
}

// An import is held to the bound on entry types unknown to sessionlog a
// session may have, as every write is: a file with more is refused,
// naming the bound, and leaves no session. Before, 5,000 types were
// imported and the session then refused appends.
func TestImportHoldsToTheUnknownTypesBound(t *testing.T) {
	data := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"types","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i := range 40 {
		id := fmt.Sprintf("t%03d", i)
		fmt.Fprintf(&b, `{"type":"x-kind-%d","id":"%s","parentId":%s,"timestamp":"2025-01-01T00:00:01.000Z"}`+"\n", i, id, parent)
		parent = `"` + id + `"`
	}
	f := filepath.Join(t.TempDir(), "types.jsonl")
	os.WriteFile(f, []byte(b.String()), 0o600)
	code, _, stderr := runIn(t, data, "", "import", f)
	if code == 0 || !strings.Contains(stderr, "at most 32") {
		t.Fatalf("import of 40 unknown types: exit %d\n%s", code, stderr)
	}
	if code, _, _ := runIn(t, data, "", "tree", "types"); code == 0 {
		t.Fatal("a refused import left a session")
	}
}
