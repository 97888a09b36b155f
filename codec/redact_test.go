package codec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// Fake secrets of each default kind, built so that no scanner flags this
// file: each is assembled from parts.
func fakeSecrets() map[string]string {
	j := func(parts ...string) string { return strings.Join(parts, "") }
	return map[string]string{
		"aws-access-key":    j("AKIA", "IOSFODNN7", "EXAMPLE"),
		"github-token":      j("ghp", "_", strings.Repeat("a1B2", 9)),
		"gitlab-token":      j("glpat", "-", "xxxxXXXX1234567890ab"),
		"anthropic-key":     j("sk-", "ant-", "api03-", strings.Repeat("Zz9_", 8)),
		"openai-key":        j("sk-", "proj-", strings.Repeat("Ab3", 10)),
		"google-api-key":    j("AIza", "SyA", strings.Repeat("b", 32)),
		"huggingface-token": j("hf", "_", strings.Repeat("q", 34)),
		"slack-token":       j("xox", "b-", "1234567890-abcdefghij"),
		"groq-key":          j("gsk", "_", strings.Repeat("r", 48)),
		"xai-key":           j("xai", "-", strings.Repeat("t", 48)),
		"stripe-key":        j("sk", "_live_", strings.Repeat("s", 24)),
	}
}

func message(text string, args string) *session.Entry {
	blocks := []session.ContentBlock{{Type: session.BlockText, Text: text}}
	if args != "" {
		blocks = append(blocks, session.ContentBlock{Type: session.BlockToolCall, Body: &session.ToolCallBlock{ID: "c1", Name: "bash", Arguments: session.Raw(args)}})
	}
	return &session.Entry{Type: session.TypeMessage, ID: "e1", Timestamp: "2026-12-03T00:00:00.000Z",
		Message: &session.Message{Role: session.RoleAssistant, Content: session.Content{Blocks: blocks}, Timestamp: 1, Body: &session.AssistantFields{}}}
}

func TestRedactDefaultRules(t *testing.T) {
	r, err := codec.NewRedactor(codec.DefaultRedactRules())
	if err != nil {
		t.Fatal(err)
	}
	for kind, secret := range fakeSecrets() {
		e := message("here: "+secret+" (done)", `{"cmd":"echo `+secret+`"}`)
		red, counts, err := r.RedactEntry(e)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if counts[kind] != 2 {
			t.Errorf("%s: counts %v, want 2 of %s", kind, counts, kind)
		}
		line, _ := codec.EncodeEntry(red)
		if strings.Contains(string(line), secret) {
			t.Errorf("%s: still in %s", kind, line)
		}
		if got := red.Message.Content.Blocks[0].Text; got != "here: "+session.RedactionText(kind)+" (done)" {
			t.Errorf("%s: text %q", kind, got)
		}
		if session.CountRedactions(red) != 2 {
			t.Errorf("%s: CountRedactions %d", kind, session.CountRedactions(red))
		}
		if e.Message.Content.Blocks[0].Text != "here: "+secret+" (done)" {
			t.Errorf("%s: the caller's entry was changed", kind)
		}
	}
}

func TestRedactKeepsWhatIsNotSecret(t *testing.T) {
	r, _ := codec.NewRedactor(codec.DefaultRedactRules())
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACB\n-----END OPENSSH PRIVATE KEY-----"
	tok := strings.Repeat("eyJhbGciOiJIUzI1", 2)
	e := message("key:\n"+key+"\nand Authorization: Bearer "+tok+" end", `{"note":"sk-short","n":[1,2.5,null,true]}`)
	red, counts, err := r.RedactEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	want := "key:\n" + session.RedactionText("private-key") + "\nand Authorization: Bearer " + session.RedactionText("bearer-token") + " end"
	if got := red.Message.Content.Blocks[0].Text; got != want || counts["private-key"] != 1 || counts["bearer-token"] != 1 {
		t.Fatalf("text %q, counts %v", got, counts)
	}
	if string(red.Message.Content.Blocks[1].ToolCall().Arguments) != `{"note":"sk-short","n":[1,2.5,null,true]}` {
		t.Fatalf("arguments without secrets changed: %s", red.Message.Content.Blocks[1].ToolCall().Arguments)
	}
	plain := message("nothing to see", `{"a":"b"}`)
	if out, counts, err := r.RedactEntry(plain); err != nil || out != plain || counts != nil {
		t.Fatalf("an entry without secrets: %v %v %v", out == plain, counts, err)
	}
}

func TestNewRedactorRefusesBadRules(t *testing.T) {
	for name, rules := range map[string][]codec.RedactRule{
		"none":        nil,
		"bad name":    {{Name: "has space", Pattern: "x"}},
		"bad pattern": {{Name: "x", Pattern: "("}},
		"empty match": {{Name: "x", Pattern: "a*"}},
		"backrefs":    {{Name: "x", Pattern: `(a)\1`}},
	} {
		if _, err := codec.NewRedactor(rules); !errors.Is(err, codec.ErrBadRule) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Any entry, redacted, still encodes to valid JSON that decodes to it,
// whatever its strings hold.
func FuzzRedactEntry(f *testing.F) {
	addSamples(f)
	for _, s := range fakeSecrets() {
		f.Add([]byte(`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"` + s + `","timestamp":1},"x":{"k":"` + s + `"}}`))
	}
	r, _ := codec.NewRedactor(codec.DefaultRedactRules())
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := codec.DecodeEntry(line)
		if err != nil {
			return
		}
		if _, err := codec.EncodeEntry(e); err != nil {
			return
		}
		red, _, err := r.RedactEntry(e)
		if err != nil {
			t.Fatalf("redact %s: %v", line, err)
		}
		out, err := codec.EncodeEntry(red)
		if err != nil {
			t.Fatalf("encode the redacted entry: %v", err)
		}
		again, counts, err := r.RedactEntry(red)
		if err != nil || len(counts) != 0 || again != red {
			t.Fatalf("redacting twice changed %s: %v %v", out, counts, err)
		}
	})
}
