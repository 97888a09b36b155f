package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
)

// ContextInput is get_context's arguments.
type ContextInput struct {
	Session   string `json:"session" jsonschema:"the session's id"`
	Entry     string `json:"entry,omitempty" jsonschema:"read the branch ending at this entry instead of the current one"`
	MaxTokens int    `json:"max_tokens,omitempty" jsonschema:"about how many tokens of messages to return; the oldest are left out first"`
}

// ContextOutput is the context as returned: its newest messages that fit.
type ContextOutput struct {
	Session       string          `json:"session"`
	Leaf          string          `json:"leaf"`
	Sequence      uint64          `json:"sequence"`
	ThinkingLevel string          `json:"thinkingLevel"`
	Model         *api.ModelReply `json:"model,omitempty"`
	// Total is how many messages the context has; Omitted how many of
	// the oldest were left out to fit max_tokens.
	Total    int              `json:"total"`
	Omitted  int              `json:"omitted"`
	Messages []ContextMessage `json:"messages"`
}

// ContextMessage is one message of a context, as text.
type ContextMessage struct {
	Entry string `json:"entry"`
	Role  string `json:"role"`
	Text  string `json:"text"`
}

// contextPages bounds the pages of a context read.
const contextPages = 100

func (t *tools) getContext(ctx context.Context, _ *mcp.CallToolRequest, in ContextInput) (*mcp.CallToolResult, ContextOutput, error) {
	if err := checkSession(in.Session); err != nil {
		return nil, ContextOutput{}, err
	}
	if in.Entry != "" {
		if err := checkEntry(in.Entry); err != nil {
			return nil, ContextOutput{}, err
		}
	}
	budget := in.MaxTokens
	if budget <= 0 {
		budget = t.cfg.DefaultTokens
	}
	budget = min(budget, t.cfg.MaxTokens)
	out := ContextOutput{Session: in.Session}
	// Only the newest messages that fit the budget (about four bytes a
	// token) are read, from the end back, each clipped to it: a context
	// of any size costs about a budget's pages, not the session's. After
	// the first page every read names the leaf it found, so writes that
	// come meanwhile change nothing of what is read.
	maxText := budget * 4
	cost := func(m ContextMessage) int { return (len(m.Text)+len(m.Role)+3)/4 + 1 }
	var first api.ContextReply
	if err := t.svc.Call(ctx, api.OpContext, api.ContextRequest{Session: in.Session, At: in.Entry}, &first); err != nil {
		return nil, ContextOutput{}, err
	}
	out.Leaf, out.Sequence, out.ThinkingLevel, out.Model, out.Total = first.Leaf, first.Sequence, first.ThinkingLevel, first.Model, first.Total
	at := first.Leaf
	// read gives the messages [lo, hi) of the context at the leaf.
	read := func(lo, hi int) ([]ContextMessage, error) {
		var got []ContextMessage
		page := first
		for offset, pages := lo, 0; offset < hi; pages++ {
			if offset != 0 || pages > 0 {
				if pages >= contextPages {
					return nil, fmt.Errorf("the context of %s is read in more than %d pages", in.Session, contextPages)
				}
				page = api.ContextReply{}
				if err := t.svc.Call(ctx, api.OpContext, api.ContextRequest{Session: in.Session, At: at, Offset: offset}, &page); err != nil {
					return nil, err
				}
			}
			err := eachMessage(page.Messages, func(i int, m []byte) {
				j := page.Offset + i
				if j < offset || j >= hi {
					return
				}
				source := ""
				if k := j - page.Offset; k < len(page.Sources) {
					source = page.Sources[k]
				}
				cm := readable(source, m)
				cm.Text = clipText(cm.Text, maxText)
				got = append(got, cm)
			})
			if err != nil {
				return nil, fmt.Errorf("the context's messages: %v", err)
			}
			if page.Next == 0 || page.Next <= offset {
				break
			}
			offset = page.Next
		}
		return got, nil
	}
	var msgs []ContextMessage
	used, hi := 0, out.Total
	// How many messages to read back at a time: as many as the first
	// page's would fill the budget, doubled each step back.
	step := max(1, out.Total)
	if first.Next != 0 {
		// Sources has an entry a message of the page: no second parse.
		avg := max(1, len(first.Messages)/max(1, len(first.Sources)))
		step = max(1, maxText/avg+1)
	}
	for hi > 0 && used < budget {
		lo := max(0, hi-step)
		got, err := read(lo, hi)
		if err != nil {
			return nil, ContextOutput{}, err
		}
		for _, m := range got {
			used += cost(m)
		}
		msgs, hi, step = append(got, msgs...), lo, step*2
	}
	// The newest message is always kept; older ones while they fit.
	omitted := hi
	for len(msgs) > 1 && used > budget {
		used -= cost(msgs[0])
		msgs[0] = ContextMessage{}
		msgs = msgs[1:]
		omitted++
	}
	out.Omitted = omitted
	out.Messages = slices.Clip(msgs)
	var b strings.Builder
	fmt.Fprintf(&b, "session %s, leaf %s, %d messages", inline(out.Session), inline(out.Leaf), out.Total)
	if out.Model != nil {
		fmt.Fprintf(&b, ", model %s/%s", inline(out.Model.Provider), inline(out.Model.ModelID))
	}
	b.WriteString("\n")
	if out.Omitted > 0 {
		fmt.Fprintf(&b, "[%d earlier messages left out to fit max_tokens %d]\n", out.Omitted, budget)
	}
	b.WriteString("[each message's text follows its heading, every line quoted with \"> \"]\n")
	for _, m := range out.Messages {
		fmt.Fprintf(&b, "\n[%s] (entry %s)\n", inline(m.Role), inline(m.Entry))
		quoted(&b, m.Text)
	}
	return text(b.String()), out, nil
}

// readable is a context message as text: its text and thinking, its tool
// calls with their arguments, images as a note; summaries as they read.
// It reads raw with encoding/json's rules (go-json-experiment's v1, which
// does not validate a value before decoding it: readableRef, in the
// tests, is the reading with encoding/json itself).
func readable(source string, raw []byte) ContextMessage {
	var m struct {
		Role       string         `json:"role"`
		Content    jsontext.Value `json:"content"`
		Summary    string         `json:"summary"`
		ToolName   string         `json:"toolName"`
		CustomType string         `json:"customType"`
		Command    string         `json:"command"`
		Output     string         `json:"output"`
	}
	// raw is an entry the service answered with, valid JSON: an error
	// is a member of another type than m's, left empty and not shown.
	_ = jsonv1.Unmarshal(raw, &m)
	var parts []string
	// Content is a string (null reads as one too) or blocks: read as the
	// one its first byte says.
	switch c := bytes.TrimLeft(m.Content, " \t\r\n"); {
	case len(c) == 0:
	case c[0] == '"' || c[0] == 'n':
		var s string
		if jsonv1.Unmarshal(c, &s) == nil {
			parts = append(parts, s)
		}
	default:
		var blocks []struct {
			Type      string         `json:"type"`
			Text      string         `json:"text"`
			Thinking  string         `json:"thinking"`
			Name      string         `json:"name"`
			Arguments jsontext.Value `json:"arguments"`
			MimeType  string         `json:"mimeType"`
		}
		_ = jsonv1.Unmarshal(c, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "thinking":
				parts = append(parts, "(thinking) "+b.Thinking)
			case "toolCall":
				parts = append(parts, "(calls "+b.Name+" "+string(b.Arguments)+")")
			case "image":
				parts = append(parts, "(an image, "+b.MimeType+")")
			}
		}
	}
	switch m.Role {
	case "compactionSummary", "branchSummary":
		parts = append(parts, m.Summary)
	case "toolResult":
		parts = append([]string{"(result of " + m.ToolName + ")"}, parts...)
	case "bashExecution":
		parts = append(parts, "$ "+m.Command, m.Output)
	}
	return ContextMessage{Entry: source, Role: m.Role, Text: strings.Join(parts, "\n")}
}

// eachMessage gives fn each element of the JSON array msgs, in one pass
// (m is valid until fn returns).
func eachMessage(msgs []byte, fn func(i int, m []byte)) error {
	// As encoding/json reads: a name twice, or a string not UTF-8, is
	// the stored message's, and shown.
	dec := jsontext.NewDecoder(bytes.NewReader(msgs), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	switch tok, err := dec.ReadToken(); {
	case err != nil:
		return err
	case tok.Kind() == 'n':
		return nil // none
	case tok.Kind() != '[':
		return fmt.Errorf("a %v, not an array", tok.Kind())
	}
	for i := 0; dec.PeekKind() != ']'; i++ {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		fn(i, v)
	}
	_, err := dec.ReadToken()
	return err
}
