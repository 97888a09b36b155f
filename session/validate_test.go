package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/session"
)

func TestValidateHeader(t *testing.T) {
	ok := session.Header{Version: 3, ID: "h", Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/w"}
	tests := []struct {
		name  string
		tweak func(h *session.Header)
		field string
	}{
		{"valid", func(h *session.Header) {}, ""},
		{"metadata object", func(h *session.Header) { h.Metadata = session.Raw(`{"a":1}`) }, ""},
		{"timestamp not a time", func(h *session.Header) { h.Timestamp = "now" }, "/timestamp"},
		{"cwd too long", func(h *session.Header) { h.Cwd = strings.Repeat("c", session.MaxPathLen+1) }, "/cwd"},
		{"parent too long", func(h *session.Header) { h.ParentSession = strings.Repeat("p", session.MaxPathLen+1) }, "/parentSession"},
		{"metadata array", func(h *session.Header) { h.Metadata = session.Raw(`[1]`) }, "/metadata"},
		{"metadata member twice", func(h *session.Header) { h.Metadata = session.Raw(`{"a":1,"a":2}`) }, "/metadata"},
		{"metadata too large", func(h *session.Header) {
			h.Metadata = session.Raw(`{"a":"` + strings.Repeat("m", session.MaxMetadataLen) + `"}`)
		}, "/metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := ok
			tt.tweak(&h)
			err := session.ValidateHeader(&h)
			var fe *session.FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field == "":
			case !errors.As(err, &fe) || fe.Pointer != tt.field || !errors.Is(err, session.ErrInvalidEntry):
				t.Fatalf("got %v, want a FieldError at %s", err, tt.field)
			}
		})
	}
}

// BenchmarkValidateWrite is the cost every write now pays, against
// ValidateLoad (what writes paid before) on the same assistant message
// with usage and a tool call.
func BenchmarkValidateWrite(b *testing.B) {
	e := &session.Entry{Type: session.TypeMessage, ID: "a1b2c3d4", ParentID: "00ff00ff", Timestamp: "2025-01-04T00:59:36.639Z",
		Message: &session.Message{Role: session.RoleAssistant, Timestamp: 1735952376639, Body: &session.AssistantFields{Provider: "anthropic", Model: "claude", API: "anthropic-messages", StopReason: "toolUse", Usage: &session.Usage{Input: 1000, Output: 200, TotalTokens: 1200, Cost: session.Cost{Input: 0.01, Total: 0.02}}},
			Content: session.BlocksContent(
				session.ContentBlock{Type: session.BlockText, Text: strings.Repeat("text ", 150)},
				session.ContentBlock{Type: session.BlockToolCall, Body: &session.ToolCallBlock{ID: "call_1", Name: "bash", Arguments: session.Raw(`{"command":"ls -la /work","timeout":30}`)}},
			)}}
	b.Run("ValidateLoad", func(b *testing.B) {
		for b.Loop() {
			if err := session.ValidateLoad(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ValidateWrite", func(b *testing.B) {
		for b.Loop() {
			if err := session.ValidateWrite(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A body that is not its type's or role's is refused with what it should
// be.
func TestBodiesMustFit(t *testing.T) {
	ts := "2025-01-01T00:00:00.000Z"
	for _, tt := range []struct {
		name string
		e    *session.Entry
		want string
	}{
		{"assistant without its members", &session.Entry{Type: session.TypeMessage, ID: "a", Timestamp: ts,
			Message: &session.Message{Role: session.RoleAssistant, Content: session.TextContent("x")}}, "*session.AssistantFields"},
		{"user with an assistant's", &session.Entry{Type: session.TypeMessage, ID: "a", Timestamp: ts,
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("x"), Body: &session.AssistantFields{}}}, "takes no Message.Body"},
		{"tool result with an assistant's", &session.Entry{Type: session.TypeMessage, ID: "a", Timestamp: ts,
			Message: &session.Message{Role: session.RoleToolResult, Content: session.TextContent("x"), Body: &session.AssistantFields{}}}, "*session.ToolResultFields"},
		{"tool call without its members", &session.Entry{Type: session.TypeMessage, ID: "a", Timestamp: ts,
			Message: &session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "p", Model: "m", StopReason: "stop"},
				Content: session.BlocksContent(session.ContentBlock{Type: session.BlockToolCall})}}, "*session.ToolCallBlock"},
		{"image with a tool call's", &session.Entry{Type: session.TypeMessage, ID: "a", Timestamp: ts,
			Message: &session.Message{Role: session.RoleUser,
				Content: session.BlocksContent(session.ContentBlock{Type: session.BlockImage, Body: &session.ToolCallBlock{ID: "c"}})}}, "not a *session.ImageBlock"},
		{"label with a compaction's", &session.Entry{Type: session.TypeLabel, ID: "a", Timestamp: ts, Body: &session.Compaction{}}, "members of a compaction"},
		{"compaction without its members", &session.Entry{Type: session.TypeCompaction, ID: "a", Timestamp: ts}, "*session.Compaction"},
		{"typed nil", &session.Entry{Type: session.TypeLabel, ID: "a", Timestamp: ts, Body: (*session.Label)(nil)}, "none of its members"},
		{"text with an image's", &session.Entry{Type: session.TypeMessage, ID: "a", Timestamp: ts,
			Message: &session.Message{Role: session.RoleUser,
				Content: session.BlocksContent(session.ContentBlock{Type: session.BlockText, Body: &session.ImageBlock{}})}}, "not a *session.SignedText"},
		{"leaf with a body", &session.Entry{Type: session.TypeLeaf, ID: "a", Timestamp: ts, Body: &session.Label{}}, "members of a label"},
		{"message entry with a body", &session.Entry{Type: session.TypeLabel, ID: "a", Timestamp: ts, Body: &session.Label{TargetID: "b"},
			Message: &session.Message{Role: session.RoleUser}}, "has a message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := session.ValidateWrite(tt.e)
			if !errors.Is(err, session.ErrInvalidEntry) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrInvalidEntry saying %q", err, tt.want)
			}
		})
	}
}

// TestVerbatimValues: a value kept verbatim is refused when nested too
// deep, when not strict JSON, or when it holds a number a float64 cannot;
// numbers inside strings, and exponents that fit, are not.
func TestVerbatimValues(t *testing.T) {
	deep := strings.Repeat("[", session.MaxDepth+1) + strings.Repeat("]", session.MaxDepth+1)
	digits := func(n int) string { return "1" + strings.Repeat("0", n-1) }
	for _, tc := range []struct {
		data string
		want string // in the error; "" for accepted
	}{
		{`{"text":"the e of a sentence","n":12.5e3}`, ""},
		{`{"a":"1e400"}`, ""},
		{`[1e308, -2.5E-300, 0.1]`, ""},
		{`[` + digits(300) + `]`, ""},
		{`{"a":1e400}`, "1e400"},
		{`[1,2,-1E999]`, "-1E999"},
		{`[` + digits(310) + `]`, "beyond what a float64"},
		{`{"a":1,"a":2}`, "not strict JSON"},
		{deep, "nested"},
		{`["\"1e400"]`, ""},
	} {
		e := &session.Entry{Type: session.TypeCustom, ID: "a", Timestamp: "2025-01-01T00:00:00.000Z",
			Body: &session.Custom{CustomType: "x", Data: session.Raw(tc.data)}}
		// ValidateWriteParsed trusts its caller's strict reading, and
		// nothing else: nesting and numbers are checked as by ValidateWrite.
		for _, c := range []struct {
			name  string
			check func(*session.Entry) error
		}{{"ValidateWrite", session.ValidateWrite}, {"ValidateWriteParsed", session.ValidateWriteParsed}} {
			want := tc.want
			if c.name == "ValidateWriteParsed" && want == "not strict JSON" {
				want = ""
			}
			err := c.check(e)
			switch {
			case want == "" && err != nil:
				t.Errorf("%s %.40s: refused: %v", c.name, tc.data, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("%s %.40s: got %v, want an error naming %q", c.name, tc.data, err, want)
			}
		}
	}
}
