// Package sessiongen makes synthetic sessions for tests and benchmarks.
package sessiongen

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// Generate makes a linear pi-like session of n entries: turns of a user
// message, an assistant message with text and a tool call, and the tool's
// result, every entry a few hundred bytes. Deterministic for a given n.
func Generate(n int) (session.Header, []*session.Entry) {
	h := session.Header{Version: session.CurrentVersion, ID: fmt.Sprintf("gen-%d", n), Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/work"}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	words := strings.Fields("the session store entry branch leaf parent compaction summary model tool result file read write append stream replica context")
	text := func(i, k int) string {
		var b strings.Builder
		for j := range k {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[(i*7+j*3)%len(words)])
		}
		return b.String()
	}
	entries := make([]*session.Entry, 0, n)
	parent := ""
	for i := range n {
		ts := base.Add(time.Duration(i) * time.Second)
		e := &session.Entry{ID: fmt.Sprintf("%08x", i+1), ParentID: parent, Timestamp: session.FormatTime(ts), Type: session.TypeMessage}
		ms := ts.UnixMilli()
		switch i % 3 {
		case 0:
			e.Message = &session.Message{Role: session.RoleUser, Content: session.TextContent(text(i, 40)), Timestamp: ms}
		case 1:
			e.Message = &session.Message{
				Role: session.RoleAssistant, Body: &session.AssistantFields{API: "anthropic-messages", Provider: "anthropic", Model: "claude-sonnet-4", Usage: &session.Usage{Input: 1000 + int64(i), Output: 50, TotalTokens: 1050 + int64(i), Cost: session.Cost{Input: 0.003, Output: 0.00075, Total: 0.00375}}, StopReason: "toolUse"},
				Content: session.BlocksContent(
					session.ContentBlock{Type: session.BlockText, Text: text(i, 30)},
					session.ContentBlock{Type: session.BlockToolCall, Body: &session.ToolCallBlock{ID: fmt.Sprintf("toolu_%d", i), Name: "read", Arguments: session.Raw(fmt.Sprintf(`{"path":"src/file%d.go"}`, i))}},
				), Timestamp: ms,
			}
		case 2:
			e.Message = &session.Message{Role: session.RoleToolResult, Body: &session.ToolResultFields{ToolCallID: fmt.Sprintf("toolu_%d", i-1), ToolName: "read"},
				Content: session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: text(i, 60)}), Timestamp: ms}
		}
		entries = append(entries, e)
		parent = e.ID
	}
	return h, entries
}
