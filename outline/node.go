// Package outline shows a session as its agent showed the conversation:
// messages, tool calls paired with their results, thinking folded,
// bookkeeping entries (progress lines, file-history snapshots, labels,
// model changes, entries of types it does not know) folded into a count
// on the message they sit by, and a branch only where the conversation
// branched — not at every side chain of bookkeeping, which is how Claude
// Code's transcripts hang progress lines off each tool call.
//
// The same outline serves `sessionlog tree`, MCP's get_tree and the
// console's tree (through the summary fields of the protocol's tree
// nodes). Every text in it is one line with control and bidirectional
// formatting characters replaced, whatever a session holds.
//
// The package does no I/O.
package outline

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// SummaryRunes bounds a node's summary.
const SummaryRunes = 120

// Node is what the outline needs of an entry.
type Node struct {
	ID, ParentID string
	Type         string
	Role         string
	Label        string
	// CustomType is a custom or custom_message entry's.
	CustomType string
	// Summary is one line of what the entry says (SummaryRunes at most).
	Summary string
	// Tools are an assistant message's tool calls, by name; for a tool
	// result, the tool it answers.
	Tools []string
	// Calls are an assistant message's tool calls as its agent shows them,
	// with what each acted on (Call): Tools' calls, in their order.
	Calls []string
	// Turn names the API message an assistant entry is part of (Claude
	// Code writes one line per content block of a message): the entries of
	// one turn are one row.
	Turn string
	// Thinking is set on an assistant message that thought.
	Thinking bool
	// Error is set on a tool result that failed.
	Error bool
}

// Custom types whose entries are the conversation of sessions their
// adapters write (a LangGraph thread's checkpoints, an Agents SDK
// session's items), not bookkeeping.
var conversationCustom = map[string]bool{"langgraph_checkpoint": true, "openai_item": true}

// Conversation reports whether n is part of the conversation rather than
// bookkeeping.
func (n *Node) Conversation() bool {
	switch session.EntryType(n.Type) {
	case session.TypeMessage, session.TypeCompaction, session.TypeBranchSummary, session.TypeCustomMessage:
		return true
	case session.TypeCustom:
		return conversationCustom[n.CustomType]
	}
	return false
}

// FromEntry is the node of e, with the label in force on it.
func FromEntry(e *session.Entry, label string) Node {
	n := Node{ID: e.ID, ParentID: e.ParentID, Type: string(e.Type), Label: label}
	if m := e.Message; m != nil {
		n.Role = m.Role
		var text strings.Builder
		for i := range m.Content.Blocks {
			b := &m.Content.Blocks[i]
			switch b.Type {
			case session.BlockText:
				text.WriteString(b.Text)
				text.WriteByte(' ')
			case session.BlockThinking:
				n.Thinking = true
			case session.BlockImage:
				text.WriteString("[image] ")
			case session.BlockToolCall:
				if tc := b.ToolCall(); tc != nil {
					n.Tools = addTool(n.Tools, OneLine(tc.Name, 60))
					n.Calls = addTool(n.Calls, Call(tc.Name, tc.Arguments))
				}
			}
		}
		if r := m.ToolResult(); r != nil {
			n.Tools, n.Error = addTool(nil, OneLine(r.ToolName, 60)), r.IsError
		}
		if a := m.Assistant(); a != nil {
			n.Turn = a.ResponseID
			if n.Turn == "" {
				n.Turn = transcript.MessageID(e)
			}
		}
		n.Summary = OneLine(text.String(), SummaryRunes)
		return n
	}
	switch b := e.Body.(type) {
	case *session.Custom:
		n.CustomType = OneLine(b.CustomType, 60)
		n.Summary = OneLine(customSummary(b), SummaryRunes)
	case *session.CustomMessage:
		n.CustomType = OneLine(b.CustomType, 60)
		n.Summary = OneLine(b.Content.Text(), SummaryRunes)
	case *session.Compaction:
		n.Summary = OneLine(fmt.Sprintf("(%d tokens before) %s", b.TokensBefore, b.Summary), SummaryRunes)
	case *session.BranchSummary:
		n.Summary = OneLine(b.Summary, SummaryRunes)
	case *session.Label:
		n.Summary = OneLine(fmt.Sprintf("%q on %s", b.Label, b.TargetID), SummaryRunes)
	case *session.NameChange:
		n.Summary = OneLine(b.Name, SummaryRunes)
	case *session.ModelChange:
		n.Summary = OneLine(b.Provider+"/"+b.ModelID, SummaryRunes)
	}
	return n
}

// maxTools bounds the tool names a node keeps: the last counts the rest.
const maxTools = 16

func addTool(tools []string, name string) []string {
	switch {
	case len(tools) < maxTools-1:
		return append(tools, OneLine(name, 60+CallRunes+2)) // a name, or a call (Call bounds its parts)
	case len(tools) == maxTools-1:
		return append(tools, "+1")
	}
	var more int
	fmt.Sscanf(tools[maxTools-1], "+%d", &more)
	tools[maxTools-1] = fmt.Sprintf("+%d", more+1)
	return tools
}

// customSummary says what the custom entries of known adapters hold: a
// LangGraph checkpoint's id, step, source and the channels that changed
// (the ids getStateHistory gives), an Agents SDK item's kind and text.
func customSummary(c *session.Custom) string {
	switch c.CustomType {
	case "langgraph_checkpoint":
		var d struct {
			ID       string                     `json:"id"`
			Channels map[string]json.RawMessage `json:"channels"`
			Metadata struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"metadata"`
		}
		if json.Unmarshal(c.Data, &d) != nil {
			return ""
		}
		s := "checkpoint " + d.ID
		if d.Metadata.Type == "json" {
			var meta struct {
				Step   *int   `json:"step"`
				Source string `json:"source"`
			}
			if json.Unmarshal([]byte(d.Metadata.Text), &meta) == nil {
				if meta.Step != nil {
					s += fmt.Sprintf(" step %d", *meta.Step)
				}
				if meta.Source != "" {
					s += " " + meta.Source
				}
			}
		}
		if len(d.Channels) > 0 {
			names := make([]string, 0, len(d.Channels))
			for k := range d.Channels {
				names = append(names, k)
			}
			sort.Strings(names)
			s += " changed " + strings.Join(names, ", ")
		}
		return s
	case "openai_item":
		kind, text, ok := ItemText(c)
		if !ok {
			return ""
		}
		return kind + ": " + text
	}
	return ""
}

// ItemText is what an Agents SDK item (custom type openai_item) says: its
// kind (the role of a message, else its type and the tool it names) and
// its text (a message's content, a tool's output); ok is false for any
// other entry or an item that is no JSON object.
func ItemText(c *session.Custom) (kind, text string, ok bool) {
	if c.CustomType != "openai_item" {
		return "", "", false
	}
	var it struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Name    string          `json:"name"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(c.Data, &it) != nil {
		return "", "", false
	}
	kind = it.Type
	if kind == "" || kind == "message" {
		kind = it.Role
	}
	if it.Name != "" {
		kind += " " + it.Name
	}
	return kind, strings.TrimSpace(textOf(it.Content, it.Output)), true
}

// textOf is the text of an item's content: a string, or parts with text.
func textOf(raws ...json.RawMessage) string {
	var out strings.Builder
	for _, raw := range raws {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out.WriteString(s)
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			for _, p := range parts {
				out.WriteString(p.Text)
				out.WriteByte(' ')
			}
		}
	}
	return out.String()
}

// Visible is s with what could act on a terminal or reorder text around
// it replaced by U+FFFD: control characters but newline and tab (escape
// codes, bells, carriage returns that overwrite a line) and the
// bidirectional controls (an "evil" that reads "live"). Every text from a
// session that is shown to a person or handed to a model's host passes
// here or through OneLine.
func Visible(s string) string {
	// Printable ASCII, lines and tabs (most text) pass a byte at a time;
	// the rest a rune at a time.
	for i := 0; i < len(s); {
		c := s[i]
		if c >= ' ' && c < 0x7f || c == '\n' || c == '\t' {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return visibleSlow(s) // an ASCII control
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Hazard(r) {
			return visibleSlow(s)
		}
		i += n
	}
	return s
}

// visibleSlow is Visible of a string that needs a change.
func visibleSlow(s string) string {
	return strings.Map(func(r rune) rune {
		if Hazard(r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// Hidden reports whether r is a control character or invisible formatting
// (bidirectional controls, zero-width characters): what a line of text
// shown on one row must not hold as it is.
func Hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// Hazard reports whether r can act on a terminal or on how the text
// around it is shown: a control character other than a line break or a
// tab (escape codes begin with one), or a bidirectional control.
func Hazard(r rune) bool {
	return (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r)
}

// OneLine is s on one line, at most max runes: runs of white space become
// one space, and control characters (escape codes among them), invisible
// formatting and bidirectional overrides become U+FFFD, so no text a
// session holds can move a terminal's cursor, forge a line of its own or
// reorder what is shown around it.
func OneLine(s string, max int) string {
	var b strings.Builder
	space, n := false, 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n >= max-1 {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		if r == utf8.RuneError || Hidden(r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
