package sessiontest

import (
	"fmt"
	"github.com/agentcore/sessionlog/session"
	"strings"
)

// HeaderLine is the header line of a version 3 session "s1".
const HeaderLine = `{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`

// UserLine is the line of a user message entry id under parent ("" for
// the root).
func UserLine(id, parent string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi %s","timestamp":1}}`, id, p, id)
}

// Lines joins lines into the bytes of a file, each ending in a newline.
func Lines(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

// Msg is a message of role with text as its content, as a writer gives
// it: an assistant's says who answered and how it ended.
func Msg(role, text string) session.Message {
	m := session.Message{Role: role, Content: session.TextContent(text), Body: session.NewMessageBody(role)}
	if a := m.Assistant(); a != nil {
		a.Provider, a.Model, a.StopReason = "test-provider", "test-model", "stop"
	}
	return m
}
