package transcript

import (
	"fmt"
	json "github.com/go-json-experiment/json/v1"
	"strings"

	"github.com/agentcore/sessionlog/session"
)

// codexLine is a rollout line: {timestamp, type, payload}. Rollouts
// before mid-2025 wrote the payload's members at the top level, with a
// first line of {id, timestamp, instructions}; both are read.
type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	// the older layout
	Role       string `json:"role"`
	RecordType string `json:"record_type"`
	ID         string `json:"id"`
}

type codexItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
	} `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Message   string          `json:"message"` // compacted
	// Replacement is a compacted line's replacement_history (Codex
	// 0.8x on): the history the model is sent from there on.
	Replacement []json.RawMessage `json:"replacement_history"`
	// session_meta and turn_context
	ID        string `json:"id"`
	CWD       string `json:"cwd"`
	Model     string `json:"model"`
	Timestamp string `json:"timestamp"`
	Version   string `json:"cli_version"`
	Provider  string `json:"model_provider"`
}

// codexDecoder turns rollout lines into a chain of entries, keeping the
// model of the turn (turn_context) for the assistant's messages.
type codexDecoder struct {
	lines
	model, provider string
}

func newCodexDecoder() *codexDecoder { return &codexDecoder{lines: newLines(FormatCodex)} }

func (d *codexDecoder) item(raw []byte) (kind string, it codexItem, err error) {
	var l codexLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return "", it, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	body := l.Payload
	kind = l.Type
	if len(body) == 0 {
		// The older layout: the line is the item, or the session's first
		// line ({id, timestamp, instructions}), or a state record.
		body, kind = raw, "response_item"
		switch {
		case l.RecordType != "":
			kind = "record/" + l.RecordType
		case l.Type == "" && l.ID != "":
			kind = "session_meta"
		}
	}
	if err := json.Unmarshal(body, &it); err != nil {
		return "", it, fmt.Errorf("%w: payload: %v", ErrBadLine, err)
	}
	if kind == "" {
		return "", it, fmt.Errorf("%w: a line without a type", ErrBadLine)
	}
	return kind, it, nil
}

func (d *codexDecoder) line(no int, raw []byte) ([]*session.Entry, error) {
	kind, it, err := d.item(raw)
	if err != nil {
		return nil, err
	}
	var l codexLine
	// The line parsed as JSON in item: an error here is a member of
	// another type than codexLine's, left zero and taken as absent.
	_ = json.Unmarshal(raw, &l)
	ts := d.stamp(l.Timestamp)
	if l.Timestamp == "" && it.Timestamp != "" {
		ts = d.stamp(it.Timestamp)
	}
	id, parent := d.idFor(no, ""), d.last
	custom := kind
	if kind == "response_item" || kind == "event_msg" {
		custom = kind + "/" + it.Type
	}
	var entries []*session.Entry
	switch {
	case kind == "turn_context" || kind == "session_meta":
		if it.Model != "" {
			d.model = it.Model
		}
		if it.Provider != "" {
			d.provider = it.Provider
		}
		entries, err = d.custom(id, parent, ts, custom, raw)
	case kind == "compacted":
		var e *session.Entry
		var retained []any
		if retained, err = d.replacement(&it, ts); err != nil {
			return nil, err
		}
		if e, err = d.compactionEntry(id, parent, ts, it.Message, 0, retained, raw); err == nil {
			entries = []*session.Entry{e}
		}
	case kind == "response_item":
		var m any
		if m, err = d.responseItem(&it, ts); err == nil && m == nil {
			entries, err = d.custom(id, parent, ts, custom, raw)
		} else if err == nil {
			entries, err = d.messages(id, parent, ts, []any{m}, raw)
		}
	default:
		entries, err = d.custom(id, parent, ts, custom, raw)
	}
	if err != nil {
		return nil, err
	}
	d.added(entries)
	return entries, nil
}

// responseItem maps a response item to a pi message: nil for the items
// that are not the conversation (reasoning, which is encrypted, web
// searches). Developer messages are system messages.
func (d *codexDecoder) responseItem(it *codexItem, ts stamp) (any, error) {
	switch it.Type {
	case "message":
		var blocks []piBlock
		for _, c := range it.Content {
			switch c.Type {
			case "input_text", "output_text", "text":
				blocks = append(blocks, textBlock(c.Text))
			case "input_image":
				if mime, data, ok := dataURL(c.ImageURL); ok {
					blocks = append(blocks, piBlock{Type: "image", Data: data, MimeType: mime})
				}
			}
		}
		switch it.Role {
		case "developer", "system":
			// The instructions Codex sends the model as developer
			// messages: pi 1.6's system message.
			var text strings.Builder
			for _, c := range it.Content {
				text.WriteString(c.Text)
			}
			return struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				Timestamp int64  `json:"timestamp"`
			}{"system", text.String(), ts.ms}, nil
		case "user":
			if blocks == nil {
				blocks = []piBlock{}
			}
			return piUser("", blocks, ts)
		case "assistant":
			return d.assistant(blocks, "stop", ts)
		}
		return nil, nil
	case "function_call", "custom_tool_call", "local_shell_call":
		args := it.Arguments
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = json.RawMessage(s) // arguments are a JSON text in a string
		}
		if it.Type == "custom_tool_call" {
			wrapped, _ := json.Marshal(map[string]json.RawMessage{"input": orNull(it.Input)})
			args = wrapped
		}
		name := it.Name
		if name == "" {
			name = it.Type
		}
		d.tools[it.CallID] = name
		return d.assistant([]piBlock{toolCall(it.CallID, name, args)}, "toolUse", ts)
	case "function_call_output", "custom_tool_call_output":
		text, isError := codexOutput(it.Output)
		return piToolResult(it.CallID, d.tools[it.CallID], []piBlock{textBlock(text)}, isError, ts)
	}
	return nil, nil
}

// codexOutput reads a tool's output: a string, or {content, success}.
func codexOutput(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var o struct {
		Content string `json:"content"`
		Success *bool  `json:"success"`
	}
	if json.Unmarshal(raw, &o) == nil && (o.Content != "" || o.Success != nil) {
		return o.Content, o.Success != nil && !*o.Success
	}
	return string(raw), false
}

func (d *codexDecoder) assistant(blocks []piBlock, stop string, ts stamp) (any, error) {
	if blocks == nil {
		blocks = []piBlock{}
	}
	a := piAssistant{Role: "assistant", Content: blocks, API: "openai-responses", Provider: d.provider,
		Model: d.model, StopReason: stop, Timestamp: ts.ms}
	if a.Provider == "" {
		a.Provider = "openai"
	}
	if a.Model == "" {
		a.Model = "unknown"
	}
	return a, nil
}

// dataURL splits data:<mime>;base64,<data>.
func dataURL(u string) (mime, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	mime, isBase64 := strings.CutSuffix(meta, ";base64")
	return mime, data, ok && isBase64 && data != ""
}

func (d *codexDecoder) headerInfo(raw []byte, h *headerInfo) {
	if h.ts != "" && h.id != "" {
		return
	}
	kind, it, err := d.item(raw)
	if err != nil {
		return
	}
	var l codexLine
	// As in line: parsed in item; a member of another type is absent.
	_ = json.Unmarshal(raw, &l)
	if kind == "session_meta" {
		if h.id == "" {
			h.id = it.ID
		}
		if it.Timestamp != "" {
			h.ts = it.Timestamp
		}
		if h.cwd == "" {
			h.cwd = it.CWD
		}
		if h.version == "" {
			h.version = it.Version
		}
	}
	if h.ts == "" {
		h.ts = l.Timestamp
	}
}

// replacement maps a compacted line's replacement_history to the messages
// the context holds after it, as codex-rs rebuilds the history on resume
// (rollout reconstruction: the replacement history replaces what came
// before). nil when the line has none: then the summary alone stands for
// what came before.
func (d *codexDecoder) replacement(it *codexItem, ts stamp) ([]any, error) {
	if it.Replacement == nil {
		return nil, nil
	}
	out := []any{}
	for i, raw := range it.Replacement {
		var item codexItem
		if err := json.Unmarshal(raw, &item); err != nil {
			return nil, fmt.Errorf("%w: replacement_history/%d: %v", ErrBadLine, i, err)
		}
		m, err := d.responseItem(&item, ts)
		if err != nil {
			return nil, fmt.Errorf("replacement_history/%d: %w", i, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}
