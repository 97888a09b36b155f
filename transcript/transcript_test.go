package transcript_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// fixture is a real transcript under testdata (see testdata/README.md).
type fixture struct {
	path   string
	format transcript.Format
	data   []byte
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want := transcript.FormatClaudeCode
		if strings.Contains(p, "codex") {
			want = transcript.FormatCodex
		}
		out = append(out, fixture{p, want, data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 8 {
		t.Fatalf("%d fixtures under testdata", len(out))
	}
	return out
}

// decode imports a fixture and builds its tree, as a store would.
func decode(t testing.TB, fx fixture) (*transcript.Decoded, *session.Tree) {
	t.Helper()
	got, err := transcript.Detect(fx.data)
	if err != nil || got != fx.format {
		t.Fatalf("%s: detected %q, %v; want %s", fx.path, got, err, fx.format)
	}
	d, err := transcript.Decode(fx.format, fx.data, transcript.SourceFor(fx.format, fx.path), codec.Strict)
	if err != nil {
		t.Fatalf("%s: %v", fx.path, err)
	}
	if err := session.ValidateHeader(&d.Header); err != nil {
		t.Fatalf("%s: header: %v", fx.path, err)
	}
	tree := session.NewTree(d.Header)
	for _, e := range d.Entries {
		if err := tree.Apply(e); err != nil {
			t.Fatalf("%s: entry %s: %v", fx.path, e.ID, err)
		}
	}
	return d, tree
}

// An import gives every line back, byte for byte, in order: straight from
// the entries, and after the session went through pi's file format (what
// the file store writes and pi reads).
func TestImportExportGivesTheLinesBack(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.path, func(t *testing.T) {
			d, _ := decode(t, fx)
			want := fx.data
			if !bytes.HasSuffix(want, []byte("\n")) {
				want = append(want, '\n')
			}
			got, skipped, err := transcript.Export(fx.format, d.Entries)
			if err != nil {
				t.Fatal(err)
			}
			diffLines(t, "export", want, got)
			if skipped != 0 {
				t.Errorf("export skipped %d entries of the import", skipped)
			}

			file, err := codec.EncodeFile(&d.Header, d.Entries)
			if err != nil {
				t.Fatal(err)
			}
			back, err := codec.DecodeFile(file, fx.path, codec.Strict)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := back.Tree.Entries()
			if err != nil {
				t.Fatal(err)
			}
			got, _, err = transcript.Export(fx.format, entries)
			if err != nil {
				t.Fatal(err)
			}
			diffLines(t, "export after a pi file", want, got)
		})
	}
}

func diffLines(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := range min(len(w), len(g)) {
		if !bytes.Equal(w[i], g[i]) {
			t.Fatalf("%s: line %d differs:\n got %.300s\nwant %.300s", what, i+1, g[i], w[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", what, len(g), len(w))
}

// The context of an imported Claude Code session holds the main chain's
// messages: those on the path from the last message line back to the
// latest compact boundary (found here from the file's own uuids, apart
// from the decoder), after the compaction's summary.
func TestClaudeContextHoldsTheMainChain(t *testing.T) {
	compactions := 0
	for _, fx := range fixtures(t) {
		if fx.format != transcript.FormatClaudeCode {
			continue
		}
		t.Run(fx.path, func(t *testing.T) {
			_, tree := decode(t, fx)
			want, compacted := claudeMainChain(t, fx.data)
			branch, err := tree.Branch(tree.Leaf())
			if err != nil {
				t.Fatal(err)
			}
			ctx := session.BuildContext(branch, session.ContextOptions{})
			msgs := ctx.Messages
			if compacted {
				compactions++
				if len(msgs) == 0 || msgs[0].Role != session.RoleCompactionSummary {
					t.Fatalf("a compacted session's context does not start with its summary")
				}
				msgs = msgs[1:]
			}
			var got []string
			for _, m := range msgs {
				got = append(got, signature(m))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("context:\n%s\n\nmain chain:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if len(want) < 2 {
				t.Fatalf("a main chain of %d messages", len(want))
			}
		})
	}
	if compactions == 0 {
		t.Fatal("no fixture has a compaction")
	}
}

// claudeMainChain walks a Claude Code file's own tree from its last
// message line to its root (or to its latest compact boundary) and gives
// the messages it meets, oldest first, as signatures.
func claudeMainChain(t *testing.T, data []byte) (sigs []string, compacted bool) {
	type line struct {
		Type              string  `json:"type"`
		UUID              string  `json:"uuid"`
		ParentUUID        *string `json:"parentUuid"`
		LogicalParentUUID string  `json:"logicalParentUuid"`
		Subtype           string  `json:"subtype"`
		IsCompactSummary  bool    `json:"isCompactSummary"`
		Message           struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	byID := map[string]*line{}
	var last *line
	for _, raw := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		l := &line{}
		if err := json.Unmarshal(raw, l); err != nil {
			t.Fatal(err)
		}
		if l.UUID != "" {
			byID[l.UUID] = l
		}
		if l.Type == "user" || l.Type == "assistant" {
			last = l
		}
	}
	var path []*line
	for l := last; l != nil; {
		if l.Subtype == "compact_boundary" {
			compacted = true
			break
		}
		path = append(path, l)
		if l.ParentUUID == nil {
			break
		}
		l = byID[*l.ParentUUID]
	}
	for i := len(path) - 1; i >= 0; i-- {
		l := path[i]
		if (l.Type != "user" && l.Type != "assistant") || l.IsCompactSummary {
			continue
		}
		var text string
		if json.Unmarshal(l.Message.Content, &text) == nil {
			sigs = append(sigs, l.Type+": "+clip(text))
			continue
		}
		var blocks []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, "text "+clip(b.Text))
			case "tool_use":
				parts = append(parts, "call "+b.ID)
			case "thinking":
				parts = append(parts, "thinking")
			case "tool_result":
				sigs = append(sigs, "result: "+b.ToolUseID)
			}
		}
		if len(parts) > 0 {
			sigs = append(sigs, l.Type+": "+strings.Join(parts, ", "))
		}
	}
	return sigs, compacted
}

// signature is a pi message as claudeMainChain describes a line's.
func signature(m *session.Message) string {
	switch m.Role {
	case session.RoleToolResult:
		return "result: " + m.ToolResult().ToolCallID
	case session.RoleUser:
		if m.Content.Plain {
			return "user: " + clip(m.Content.Text())
		}
	}
	var parts []string
	for _, b := range m.Content.Blocks {
		switch b.Type {
		case session.BlockText:
			parts = append(parts, "text "+clip(b.Text))
		case session.BlockToolCall:
			parts = append(parts, "call "+b.ToolCall().ID)
		case session.BlockThinking:
			parts = append(parts, "thinking")
		}
	}
	return m.Role + ": " + strings.Join(parts, ", ")
}

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return fmt.Sprintf("%q", s)
}

// A Codex rollout's context is its conversation: every user and assistant
// message, tool call and tool output, in order.
func TestCodexContextIsTheConversation(t *testing.T) {
	for _, fx := range fixtures(t) {
		if fx.format != transcript.FormatCodex {
			continue
		}
		t.Run(fx.path, func(t *testing.T) {
			_, tree := decode(t, fx)
			var want []string
			for _, raw := range bytes.Split(bytes.TrimSpace(fx.data), []byte("\n")) {
				// What codex-rs sends on resume: the response items, with
				// developer messages; a compacted line replaces all before
				// it with its replacement_history (or its summary alone).
				type item struct {
					Type        string            `json:"type"`
					Role        string            `json:"role"`
					CallID      string            `json:"call_id"`
					Replacement []json.RawMessage `json:"replacement_history"`
				}
				var l struct {
					Type    string `json:"type"`
					Payload item   `json:"payload"`
				}
				if err := json.Unmarshal(raw, &l); err != nil {
					t.Fatal(err)
				}
				add := func(p item) {
					switch {
					case p.Type == "message" && (p.Role == "user" || p.Role == "assistant"):
						want = append(want, p.Role)
					case p.Type == "message" && p.Role == "developer":
						want = append(want, "system")
					case p.Type == "function_call" || p.Type == "custom_tool_call":
						want = append(want, "call "+p.CallID)
					case p.Type == "function_call_output" || p.Type == "custom_tool_call_output":
						want = append(want, "result "+p.CallID)
					}
				}
				switch l.Type {
				case "response_item":
					add(l.Payload)
				case "compacted":
					want = []string{"compactionSummary"}
					for _, r := range l.Payload.Replacement {
						var it item
						if err := json.Unmarshal(r, &it); err != nil {
							t.Fatal(err)
						}
						add(it)
					}
				}
			}
			branch, err := tree.Branch(tree.Leaf())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range session.BuildContext(branch, session.ContextOptions{}).Messages {
				switch {
				case m.Role == session.RoleToolResult:
					got = append(got, "result "+m.ToolResult().ToolCallID)
				case m.Role == session.RoleAssistant && len(m.Content.Blocks) == 1 && m.Content.Blocks[0].Type == session.BlockToolCall:
					got = append(got, "call "+m.Content.Blocks[0].ToolCall().ID)
				default:
					got = append(got, m.Role)
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("context:\n%v\nconversation:\n%v", got, want)
			}
		})
	}
}

// Bad lines are named by their line, as for pi's files: a strict import
// refuses the file, a lenient one skips them; a last line cut short is
// skipped either way.
func TestBadLinesAreReportedByLine(t *testing.T) {
	tests := []struct {
		name, data string
		strictErr  error
		issues     int
	}{
		{"not JSON", good + "\nnot json\n" + good2, transcript.ErrNotJSON, 1},
		{"no type", good + "\n{\"uuid\":\"x\"}\n" + good2, transcript.ErrBadLine, 1},
		{"a message that is not an object", good + "\n" + `{"type":"user","uuid":"u3","message":"hi"}` + "\n" + good2, transcript.ErrBadLine, 1},
		{"torn last line", good + "\n" + good2 + "\n{\"type\":\"us", nil, 1},
		// Lines read in one pass are strict JSON throughout, and their
		// entries are not read again: what is not strict is still refused.
		{"a string not UTF-8 in a line kept as it is", good + "\n" + `{"type":"progress","uuid":"p1","data":{"out":"` + "\xff\xfe" + `"}}` + "\n" + good2, transcript.ErrBadLine, 1},
		{"a member named twice deep in a line kept as it is", good + "\n" + `{"type":"progress","uuid":"p1","data":{"a":{"b":1,"b":2}}}` + "\n" + good2, transcript.ErrBadLine, 1},
		{"a member named twice in a tool call's input", good + "\n" + `{"type":"assistant","uuid":"a0","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"c":"ls","c":"rm"}}]}}` + "\n" + good2, transcript.ErrBadLine, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := transcript.Source{ID: "s-1", File: "s.jsonl"}
			_, err := transcript.Decode(transcript.FormatClaudeCode, []byte(tc.data), src, codec.Strict)
			var fe *codec.FileError
			if tc.strictErr != nil {
				if !errors.Is(err, tc.strictErr) || !errors.As(err, &fe) || fe.Issues[0].Line != 2 {
					t.Fatalf("strict: %v, want %v at line 2", err, tc.strictErr)
				}
			} else if err != nil {
				t.Fatalf("strict: %v", err)
			}
			d, err := transcript.Decode(transcript.FormatClaudeCode, []byte(tc.data), src, codec.Lenient)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Issues) != tc.issues || len(d.Entries) != 2 {
				t.Fatalf("lenient: %d issues, %d entries: %v", len(d.Issues), len(d.Entries), d.Issues)
			}
		})
	}
}

const good = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","message":{"role":"user","content":"hi"}}`

const good2 = `{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s-1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","model":"m","content":[{"type":"text","text":"hello"}]}}`

// A user line with several tool results becomes a chain of tool results,
// each in the context; the line is written back once.
func TestALineWithSeveralToolResults(t *testing.T) {
	data := good + "\n" +
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s-1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","model":"m","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"p":1}},{"type":"tool_use","id":"t2","name":"Grep","input":{"q":"x"}}]}}` + "\n" +
		`{"type":"user","uuid":"r1","parentUuid":"a1","sessionId":"s-1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"two"}],"is_error":true}]}}` + "\n" +
		`{"type":"assistant","uuid":"a2","parentUuid":"r1","sessionId":"s-1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","model":"m","content":[{"type":"text","text":"done"}]}}` + "\n"
	d, err := transcript.Decode(transcript.FormatClaudeCode, []byte(data), transcript.Source{ID: "s-1", File: "s.jsonl"}, codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	tree := session.NewTree(d.Header)
	for _, e := range d.Entries {
		if err := tree.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	branch, _ := tree.Branch(tree.Leaf())
	var got []string
	for _, m := range session.BuildContext(branch, session.ContextOptions{}).Messages {
		got = append(got, signature(m))
		if r := m.ToolResult(); r != nil {
			got[len(got)-1] += fmt.Sprintf(" %s error=%v", r.ToolName, r.IsError)
		}
	}
	want := []string{`user: "hi"`, `assistant: call t1, call t2`, `result: t1 Read error=false`, `result: t2 Grep error=true`, `assistant: text "done"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("context:\n%s", strings.Join(got, "\n"))
	}
	out, skipped, err := transcript.Export(transcript.FormatClaudeCode, d.Entries)
	if err != nil || string(out) != data || skipped != 0 {
		t.Fatalf("export: %v, skipped %d\n%s", err, skipped, out)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, data string
		want       transcript.Format
	}{
		{"pi", `{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}`, transcript.FormatPi},
		{"claude code", `{"type":"file-history-snapshot","messageId":"m","snapshot":{}}` + "\n" + good, transcript.FormatClaudeCode},
		{"codex", `{"timestamp":"2025-01-01T00:00:00.000Z","type":"session_meta","payload":{"id":"x"}}`, transcript.FormatCodex},
		{"codex before mid-2025", `{"id":"x","timestamp":"2025-01-01T00:00:00.000Z","instructions":null}` + "\n" + `{"record_type":"state"}`, transcript.FormatCodex},
		{"garbage", "not json\n{}\n", ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := transcript.Detect([]byte(tc.data))
			if got != tc.want || (tc.want == "") != errors.Is(err, transcript.ErrUnknownFormat) {
				t.Fatalf("Detect = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
