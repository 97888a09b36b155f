package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An edge's data dir records the redaction its entries went through
// (redaction.json, written by serve -redact): every verb that writes to
// it on the machine — append, import — goes through the same rules, not
// only the gateway (issue 68, item 2: append and import on the edge stored
// and sent raw keys).
func TestDataDirRedactionOnEveryWrite(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "e1")
	if err := os.WriteFile(filepath.Join(data, redactionFile), []byte(`{"defaults":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "AKIAIOSFODNN7EXAMPLE"
	mustRun(t, data, "", "append", "e1", "-text", "the key is "+key)
	file := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(file, []byte(`{"type":"session","version":3,"id":"imp","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"and again `+key+`","timestamp":1}}
`), 0o644)
	mustRun(t, data, "", "import", file)
	for _, id := range []string{"e1", "imp"} {
		ctx := mustRun(t, data, "", "context", id)
		if strings.Contains(ctx, key) || !strings.Contains(ctx, "[REDACTED:aws-access-key]") {
			t.Errorf("%s's context holds the key, or no redaction:\n%s", id, ctx)
		}
	}
	// A record that cannot be read stops the write, by name.
	os.WriteFile(filepath.Join(data, redactionFile), []byte(`{`), 0o600)
	if code, _, stderr := runIn(t, data, "", "append", "e1", "-text", key); code == 0 || !strings.Contains(stderr, redactionFile) {
		t.Fatalf("a damaged record: exit %d, %q", code, stderr)
	}
}

// The node's rules are the deployment's: serve records them in its
// streams, and every writer that reaches them follows them — the command
// line given only the node's URL (no data dir to read a record from), as
// a program on the library would be. Before, such a writer stored raw
// keys on a node that redacts (issue 68, item 2).
func TestRecordedRedactionOnEveryWriter(t *testing.T) {
	data := t.TempDir()
	serveFor(t, data, "-http", "", "-redact")
	url, err := os.ReadFile(serveURLFile(data))
	if err != nil {
		t.Fatal(err)
	}
	at := []string{"-url", strings.TrimSpace(string(url))}
	const key = "AKIAIOSFODNN7EXAMPLE"
	mustRun(t, "", "", append([]string{"new", "-id", "w1"}, at...)...)
	mustRun(t, "", "", append([]string{"append", "w1", "-text", "the key is " + key}, at...)...)
	ctx := mustRun(t, "", "", append([]string{"context", "w1"}, at...)...)
	if strings.Contains(ctx, key) || !strings.Contains(ctx, "[REDACTED:aws-access-key]") {
		t.Fatalf("a write through the node's URL kept the key:\n%s", ctx)
	}
}
