package codec

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// Reading strings without the copies and allocations a token costs: a
// member name is matched against the names the decoder knows without
// becoming a string, and values that repeat across a session (roles, block
// types, providers, models, tool names) are shared rather than allocated
// per entry — most of what a long session's tree would otherwise hold twice.

// knownName returns b as a constant string when it is a member name the
// decoder switches on: a name read from input becomes a string with no
// allocation (a switch on string(b) does not convert; a map was slower).
func knownName(b []byte) (string, bool) {
	switch string(b) {
	case "type":
		return "type", true
	case "id":
		return "id", true
	case "parentId":
		return "parentId", true
	case "timestamp":
		return "timestamp", true
	case "message":
		return "message", true
	case "thinkingLevel":
		return "thinkingLevel", true
	case "provider":
		return "provider", true
	case "modelId":
		return "modelId", true
	case "activeTools":
		return "activeTools", true
	case "summary":
		return "summary", true
	case "firstKeptEntryId":
		return "firstKeptEntryId", true
	case "tokensBefore":
		return "tokensBefore", true
	case "retainedTail":
		return "retainedTail", true
	case "usage":
		return "usage", true
	case "details":
		return "details", true
	case "data":
		return "data", true
	case "fromHook":
		return "fromHook", true
	case "fromId":
		return "fromId", true
	case "customType":
		return "customType", true
	case "content":
		return "content", true
	case "display":
		return "display", true
	case "targetId":
		return "targetId", true
	case "label":
		return "label", true
	case "name":
		return "name", true
	case "version":
		return "version", true
	case "cwd":
		return "cwd", true
	case "parentSession":
		return "parentSession", true
	case "metadata":
		return "metadata", true
	case "role":
		return "role", true
	case "api":
		return "api", true
	case "model":
		return "model", true
	case "responseId":
		return "responseId", true
	case "stopReason":
		return "stopReason", true
	case "errorMessage":
		return "errorMessage", true
	case "toolCallId":
		return "toolCallId", true
	case "toolName":
		return "toolName", true
	case "isError":
		return "isError", true
	case "text":
		return "text", true
	case "textSignature":
		return "textSignature", true
	case "thinking":
		return "thinking", true
	case "thinkingSignature":
		return "thinkingSignature", true
	case "redacted":
		return "redacted", true
	case "mimeType":
		return "mimeType", true
	case "arguments":
		return "arguments", true
	case "thoughtSignature":
		return "thoughtSignature", true
	case "input":
		return "input", true
	case "output":
		return "output", true
	case "cacheRead":
		return "cacheRead", true
	case "cacheWrite":
		return "cacheWrite", true
	case "totalTokens":
		return "totalTokens", true
	case "cost":
		return "cost", true
	case "total":
		return "total", true
	}
	return "", false
}

// Symbols: values that name one of few things. Those pi writes are known
// up front; others (providers, models, tools of a deployment) are learnt,
// up to a bound, so hostile input cannot grow the table.
const (
	maxSymbols   = 1024
	maxSymbolLen = 64
)

var knownSymbols = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		"message", "thinking_level_change", "model_change", "active_tools_change", "compaction",
		"branch_summary", "custom", "custom_message", "label", "session_info", "leaf",
		"user", "assistant", "toolResult", "bashExecution", "compactionSummary", "branchSummary",
		"text", "thinking", "toolCall", "image", "image/png", "image/jpeg", "image/webp", "image/gif",
		"stop", "length", "toolUse", "error", "aborted",
		"off", "minimal", "low", "medium", "high", "xhigh",
		"anthropic", "openai", "google", "anthropic-messages", "openai-completions",
		"openai-responses", "google-generative-ai",
		"bash", "read", "edit", "write", "grep", "find", "ls",
	} {
		m[s] = s
	}
	return m
}()

// symbols is a reader's table of learnt symbols.
type symbols map[string]string

// intern returns b as a string, shared with earlier equal values.
func (s *symbols) intern(b []byte) string {
	if v, ok := knownSymbols[string(b)]; ok {
		return v
	}
	if len(b) > maxSymbolLen {
		return string(b)
	}
	if v, ok := (*s)[string(b)]; ok {
		return v
	}
	v := string(b)
	if *s == nil {
		*s = symbols{}
	}
	if len(*s) < maxSymbols {
		(*s)[v] = v
	}
	return v
}

// unquoted returns the text of the JSON string literal v (as read by the
// decoder, so well formed): its inside when it has no escapes and is valid
// UTF-8, else decoded into the reader's scratch buffer, invalid UTF-8
// becoming U+FFFD as Token.String makes it. The result is valid until the
// next call.
func (r *reader) unquoted(v jsontext.Value) []byte {
	b, _ := r.unquote(v)
	return b
}

// unquote is unquoted, also saying whether the text is the literal's own
// bytes (inside the line read) rather than the scratch buffer.
func (r *reader) unquote(v jsontext.Value) ([]byte, bool) {
	in := v[1 : len(v)-1]
	// The scanner in use (a held member is read by one of its own) knows
	// whether the literal it just read is plain.
	if sc, ok := r.d.(*scanner); ok && sc.plain || bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return in, true
	}
	// The decoder has checked the literal: the only error left is the
	// report of invalid UTF-8, which was replaced.
	r.scratch, _ = jsontext.AppendUnquote(r.scratch[:0], v)
	return r.scratch, false
}

// readString reads a string value (the caller has peeked '"').
func (r *reader) readString() (string, error) {
	v, err := r.d.ReadValue()
	if err != nil {
		return "", err
	}
	b, inLine := r.unquote(v)
	if inLine && r.shared && len(b) > 0 {
		// The line is the caller's to give (WithSharedData): the
		// string is its bytes, not a copy of them.
		return unsafe.String(&b[0], len(b)), nil
	}
	return string(b), nil
}

// readSymbol reads a string value likely to repeat (the caller has
// peeked '"').
func (r *reader) readSymbol() (string, error) {
	v, err := r.d.ReadValue()
	if err != nil {
		return "", err
	}
	return r.syms.intern(r.unquoted(v)), nil
}

// readName reads a member name: a known one without allocating.
func (r *reader) readName() (string, error) {
	v, err := r.d.ReadValue()
	if err != nil {
		return "", err
	}
	b := r.unquoted(v)
	if k, ok := knownName(b); ok {
		return k, nil
	}
	return string(b), nil
}
