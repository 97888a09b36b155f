package transcript_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// A kept line shares its long strings with its entry: an image is stored
// once, a real 3 MB transcript takes little more than its own size, and
// what is shared comes back byte for byte.
func TestKeptLinesShareTheirStrings(t *testing.T) {
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfa, 0x11, 0x3c}, 100_000))
	line := fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":%q},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%s"}}]}}`,
		strings.Repeat("a long prompt <with> & marks ", 20), img)
	d, err := transcript.Decode(transcript.FormatClaudeCode, []byte(line+"\n"), transcript.Source{ID: "s-1", File: "s.jsonl"}, codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	e := d.Entries[0]
	var kept []byte
	for _, f := range e.Extra {
		if f.Key == "claudeCodeShared" {
			kept = f.Value
		}
	}
	if kept == nil || len(kept) > 600 {
		t.Fatalf("the line is kept in %d bytes, not shared (members %v)", len(kept), e.Extra)
	}
	if b := e.Message.Content.Blocks; len(b) != 2 || b[1].Type != session.BlockImage {
		t.Fatalf("the image is not the message's: %+v", b)
	}
	out, _, err := transcript.Export(transcript.FormatClaudeCode, d.Entries)
	if err != nil || string(out) != line+"\n" {
		t.Fatalf("export: %v, %d bytes", err, len(out))
	}

	// The entry changed under its kept line (a client rewrote its text):
	// the export says so rather than write another line.
	e.Message.Content.Blocks[0].Text = "changed"
	if _, _, err := transcript.Export(transcript.FormatClaudeCode, d.Entries); err == nil || !strings.Contains(err.Error(), "shared string") {
		t.Fatalf("export of a changed entry: %v", err)
	}

	// The real transcripts: little more than their size, text included.
	for _, fx := range fixtures(t) {
		if len(fx.data) < 1<<20 {
			continue
		}
		d, _ := decode(t, fx)
		file, err := codec.EncodeFile(&d.Header, d.Entries)
		if err != nil {
			t.Fatal(err)
		}
		if r := float64(len(file)) / float64(len(fx.data)); r > 1.25 {
			t.Errorf("%s: stored as %d bytes, %.2fx its %d", fx.path, len(file), r, len(fx.data))
		}
	}
}

// A line holding what looks like a reference is kept whole, and comes back
// as it was.
func TestALineLikeATemplateIsKeptWhole(t *testing.T) {
	long := strings.Repeat("x", 300)
	line := fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-1","timestamp":"2026-01-01T00:00:00.000Z","note":"\u00000123456789abcdef","message":{"role":"user","content":%q}}`, long)
	d, err := transcript.Decode(transcript.FormatClaudeCode, []byte(line), transcript.Source{ID: "s-1", File: "s.jsonl"}, codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := transcript.Export(transcript.FormatClaudeCode, d.Entries)
	if err != nil || string(out) != line+"\n" {
		t.Fatalf("export: %v\n%s", err, out)
	}
	var keys []string
	for _, f := range d.Entries[0].Extra {
		keys = append(keys, f.Key)
	}
	if !slices.Contains(keys, "claudeCode") && !slices.Contains(keys, "claudeCodeShared") {
		t.Fatalf("no kept line: %v", keys)
	}
	if _, _, err := transcript.Export(transcript.FormatCodex, d.Entries); !errors.Is(err, transcript.ErrNotImported) {
		t.Fatalf("a Claude Code session exported as Codex: %v", err)
	}
}
