package transcript

import (
	"unicode/utf8"

	"github.com/agentcore/sessionlog/session"
)

// The messages a line maps to are made as entries directly, not written as
// JSON and decoded back by codec (a fifth of a Claude Code file's decode):
// each gives the entry that JSON decodes to, member for member, which
// TestDirectEntriesAreDecodedOnes and FuzzDecode check against the
// decoding on every file they read. A message holding what the JSON would
// change (a string not UTF-8, arguments not in the form the encoder
// writes) is not made so: it takes the JSON.

// directMessage is a pi message that can be made without its JSON.
type directMessage interface {
	// message is the message its JSON decodes to; ok is false when only
	// the JSON would say (see above).
	message() (m session.Message, ok bool)
}

// piUserMessage is a user message: Content a string or []piBlock.
type piUserMessage struct {
	Role      string `json:"role"`
	Content   any    `json:"content"`
	Timestamp int64  `json:"timestamp"`
}

func (u piUserMessage) message() (session.Message, bool) {
	m := session.Message{Role: u.Role, Timestamp: u.Timestamp}
	switch c := u.Content.(type) {
	case string:
		if !utf8.ValidString(c) {
			return m, false
		}
		m.Content = session.TextContent(c)
	case []piBlock:
		blocks, ok := directBlocks(c)
		if !ok {
			return m, false
		}
		m.Content = session.Content{Blocks: blocks}
	default:
		return m, false
	}
	return m, true
}

type piToolResultMessage struct {
	Role       string    `json:"role"`
	ToolCallID string    `json:"toolCallId"`
	ToolName   string    `json:"toolName"`
	Content    []piBlock `json:"content"`
	IsError    bool      `json:"isError"`
	Timestamp  int64     `json:"timestamp"`
}

func (r piToolResultMessage) message() (session.Message, bool) {
	blocks, ok := directBlocks(r.Content)
	if !ok || !validStrings(r.ToolCallID, r.ToolName) {
		return session.Message{}, false
	}
	return session.Message{Role: r.Role, Content: session.Content{Blocks: blocks}, Timestamp: r.Timestamp,
		Body: &session.ToolResultFields{ToolCallID: r.ToolCallID, ToolName: r.ToolName, IsError: r.IsError}}, true
}

func (a piAssistant) message() (session.Message, bool) {
	blocks, ok := directBlocks(a.Content)
	if !ok || !validStrings(a.API, a.Provider, a.Model, a.StopReason) {
		return session.Message{}, false
	}
	u, c := a.Usage, a.Usage.Cost
	return session.Message{Role: a.Role, Content: session.Content{Blocks: blocks}, Timestamp: a.Timestamp,
		Body: &session.AssistantFields{API: a.API, Provider: a.Provider, Model: a.Model, StopReason: a.StopReason,
			Usage: &session.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, TotalTokens: u.TotalTokens,
				Cost: session.Cost{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Total: c.Total}}}}, true
}

// directBlocks are the content blocks pbs decode to (never nil: pi's
// content is an array).
func directBlocks(pbs []piBlock) ([]session.ContentBlock, bool) {
	out := make([]session.ContentBlock, len(pbs))
	for i, b := range pbs {
		if !validStrings(b.Type, b.ThinkingSignature, b.Data, b.MimeType, b.ID, b.Name) {
			return nil, false
		}
		switch {
		case b.Type == session.BlockText && b.Text != nil && b.Thinking == nil && b.ThinkingSignature == "" && b.Data == "" &&
			b.MimeType == "" && b.ID == "" && b.Name == "" && b.Arguments == nil:
			if !utf8.ValidString(*b.Text) {
				return nil, false
			}
			out[i] = session.ContentBlock{Type: b.Type, Text: *b.Text}
		case b.Type == session.BlockThinking && b.Thinking != nil && b.Text == nil && b.Data == "" && b.MimeType == "" &&
			b.ID == "" && b.Name == "" && b.Arguments == nil:
			if !utf8.ValidString(*b.Thinking) {
				return nil, false
			}
			out[i] = session.ContentBlock{Type: b.Type, Body: &session.ThinkingBlock{Thinking: *b.Thinking, ThinkingSignature: b.ThinkingSignature}}
		case b.Type == session.BlockImage && b.Data != "" && b.Text == nil && b.Thinking == nil && b.ThinkingSignature == "" &&
			b.ID == "" && b.Name == "" && b.Arguments == nil:
			out[i] = session.ContentBlock{Type: b.Type, Body: &session.ImageBlock{Data: b.Data, MimeType: b.MimeType}}
		case b.Type == session.BlockToolCall && b.Text == nil && b.Thinking == nil && b.ThinkingSignature == "" &&
			b.Data == "" && b.MimeType == "" && len(b.Arguments) > 0:
			args, err := marshal(b.Arguments) // as the message's JSON writes them
			if err != nil {
				return nil, false
			}
			out[i] = session.ContentBlock{Type: b.Type, Body: &session.ToolCallBlock{ID: b.ID, Name: b.Name, Arguments: session.Raw(args)}}
		default:
			return nil, false
		}
	}
	return out, true
}

func validStrings(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

var (
	_ directMessage = piUserMessage{}
	_ directMessage = piToolResultMessage{}
	_ directMessage = piAssistant{}
)
