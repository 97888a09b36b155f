package transcript

import (
	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	json "github.com/go-json-experiment/json/v1"
	"strings"

	"github.com/agentcore/sessionlog/session"
)

// claudeLine is what the decoder reads of a Claude Code line; the rest
// stays in the line, kept whole.
type claudeLine struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid"`
	Timestamp         string          `json:"timestamp"`
	SessionID         string          `json:"sessionId"`
	CWD               string          `json:"cwd"`
	Version           string          `json:"version"`
	Message           json.RawMessage `json:"message"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	CompactMetadata   *struct {
		PreTokens int64 `json:"preTokens"`
	} `json:"compactMetadata"`
	Summary     string `json:"summary"`     // the old "summary" lines: a title
	CustomTitle string `json:"customTitle"` // "custom-title" lines (/rename)
}

// claudeDecoder turns Claude Code lines into entries, one line at a time,
// keeping what later lines need: the ids given, the last entry, the tool
// calls' names (a tool result names only its call) and the last compact
// boundary's token count.
type claudeDecoder struct {
	lines
	preTokens int64
}

func newClaudeDecoder() *claudeDecoder {
	return &claudeDecoder{lines: newLines(FormatClaudeCode)}
}

// claudeParsed is what a Claude Code line says on its own, before the
// lines above it are known: read for all lines at once, on every core,
// when a whole file is decoded (parse), then turned into entries in order.
type claudeParsed struct {
	l          claudeLine
	err        error // the line is not JSON
	strict     bool  // read whole in one pass (parseTyped): strict JSON
	nullParent bool  // "parentUuid": null
	hasMessage bool  // a "message" member, null included
	// The message, when the line has one: m, or mErr when it is not an
	// object; its content as text, or blocks (blocksErr when neither).
	m         claudeMessage
	mErr      error
	text      *string
	blocks    []claudeBlock
	blocksErr error
	// results are the contents of the tool_result blocks, by block.
	results []claudeResult
}

type claudeResult struct {
	content []piBlock
	err     error
}

// parse reads a line for line.
func (d *claudeDecoder) parse(raw []byte) any { return parseClaude(raw) }

func parseClaude(raw []byte) *claudeParsed {
	p := &claudeParsed{}
	if p.strict = p.parseTyped(raw); !p.strict {
		p.parseMembers(raw)
	}
	p.nullParent = p.l.UUID != "" && p.l.ParentUUID == nil && hasNullParent(raw)
	return p
}

// parseMembers reads a line member by member, each of its message's
// parts read again from the bytes of the part above it: the reading of
// every line that parseTyped does not take, and what parseTyped's
// reading must equal (TestClaudeParseTypedAsMembers).
func (p *claudeParsed) parseMembers(raw []byte) {
	*p = claudeParsed{}
	if err := json.Unmarshal(raw, &p.l); err != nil {
		p.err = fmt.Errorf("%w: %v", ErrNotJSON, err)
		return
	}
	p.hasMessage = len(p.l.Message) > 0
	// (A line without a message has mErr set too, which only a
	// compact summary, where a message must be, reports.)
	if p.mErr = json.Unmarshal(p.l.Message, &p.m); p.mErr != nil {
		return
	}
	var text string
	if json.Unmarshal(p.m.Content, &text) == nil {
		p.text = &text
		return
	}
	if p.blocksErr = json.Unmarshal(p.m.Content, &p.blocks); p.blocksErr != nil {
		return
	}
	p.results = make([]claudeResult, len(p.blocks))
	for i := range p.blocks {
		if p.blocks[i].Type == "tool_result" {
			p.results[i].content, p.results[i].err = resultContent(p.blocks[i].Content)
		}
	}
}

// parseTyped reads a line with a message in one pass, its message as an
// object and its content — text, or blocks with their tool results —
// as values rather than as bytes read again: most lines are such. It
// reports false for any other line — no message or no content, a message
// or content that is not of its kind, a member named twice or a string
// not UTF-8 anywhere in it, not JSON — which is then read as it always
// was, member by member (parseMembers), so that what such a line becomes
// (and the error it is) does not change. A line it reads is strict JSON
// throughout: its entries' checks need not read their values again.
func (p *claudeParsed) parseTyped(raw []byte) bool {
	var typed struct {
		claudeLine
		Message claudeTypedMessage `json:"message"`
	}
	if jsonv2.Unmarshal(raw, &typed, json.DefaultOptionsV1(), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false)) != nil {
		return false
	}
	p.l = typed.claudeLine
	if !typed.Message.present {
		// What parseMembers finds of a line without a message.
		p.mErr = json.Unmarshal(nil, &p.m)
		return true
	}
	c := typed.Message.m.Content
	if c == nil {
		return false
	}
	p.m, p.hasMessage = typed.Message.m.claudeMessage, true
	if c.text != nil {
		p.text = c.text
		return true
	}
	p.blocks, p.results = make([]claudeBlock, len(c.blocks)), make([]claudeResult, len(c.blocks))
	for i, b := range c.blocks {
		p.blocks[i] = b.claudeBlock
		if b.Type == "tool_result" {
			p.results[i].content = b.Content.blocks
			if p.results[i].content == nil { // no content member
				p.results[i].content = []piBlock{}
			}
		}
	}
	return true
}

// claudeTypedMessage is a line's message read in place: present is false
// when the line has none; null or not an object, it is parseMembers's.
type claudeTypedMessage struct {
	present bool
	m       struct {
		claudeMessage
		Content *claudeContent `json:"content"`
	}
}

func (t *claudeTypedMessage) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' {
		return errNotOurs
	}
	t.present = true
	return jsonv2.UnmarshalDecode(dec, &t.m)
}

// claudeContent is a message's content read in place: its text, or its
// blocks. (A null content leaves the pointer to it nil: parseMembers reads
// that line.)
type claudeContent struct {
	text   *string
	blocks []claudeTypedBlock
}

type claudeTypedBlock struct {
	claudeBlock
	Content claudeResultContent `json:"content"`
}

func (c *claudeContent) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		var text string
		c.text = &text
		return jsonv2.UnmarshalDecode(dec, &text)
	case '[':
		return jsonv2.UnmarshalDecode(dec, &c.blocks)
	}
	return errNotOurs
}

// claudeResultContent is a tool result's content read in place, as
// resultContent maps it.
type claudeResultContent struct{ blocks []piBlock }

func (c *claudeResultContent) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		c.blocks = []piBlock{}
		return dec.SkipValue()
	case '"':
		var text string
		if err := jsonv2.UnmarshalDecode(dec, &text); err != nil {
			return err
		}
		c.blocks = []piBlock{textBlock(text)}
		return nil
	case '[':
		var blocks []claudeBlock
		if err := jsonv2.UnmarshalDecode(dec, &blocks); err != nil {
			return err
		}
		c.blocks = mediaBlocks(blocks)
		return nil
	}
	return errNotOurs
}

// errNotOurs stops parseTyped at a value parseMembers reads, and reports.
var errNotOurs = errors.New("transcript: read member by member")

// line decodes line number no (1-based) into its entries.
func (d *claudeDecoder) line(no int, raw []byte) ([]*session.Entry, error) {
	return d.parsedLine(no, raw, parseClaude(raw))
}

// parsedLine is line, of a line read already (p is parse's).
func (d *claudeDecoder) parsedLine(no int, raw []byte, parsed any) ([]*session.Entry, error) {
	p := parsed.(*claudeParsed)
	if p.err != nil {
		return nil, p.err
	}
	d.parsed = p.strict
	defer func() { d.parsed = false }()
	l := &p.l
	if l.Type == "" {
		return nil, fmt.Errorf("%w: a line without a type", ErrBadLine)
	}
	ts := d.stamp(l.Timestamp)
	id := d.idFor(no, l.UUID)
	parent := d.last
	switch {
	case l.Type == "system" && l.Subtype == "compact_boundary" && d.ids[l.LogicalParentUUID]:
		parent = l.LogicalParentUUID
	case l.ParentUUID != nil && *l.ParentUUID == "":
		parent = ""
	case l.ParentUUID != nil && d.ids[*l.ParentUUID]:
		parent = *l.ParentUUID
	case l.ParentUUID != nil:
		// Its parent is in another file (a subagent's first lines name
		// the main session's): a root here, as in the file's own tree.
		parent = ""
	case p.nullParent:
		parent = "" // "parentUuid": null: a root
	}
	if l.Type == "system" && l.Subtype == "compact_boundary" && l.CompactMetadata != nil {
		d.preTokens = l.CompactMetadata.PreTokens
	}

	var entries []*session.Entry
	var err error
	switch {
	case l.Type == "user" && l.IsCompactSummary:
		entries, err = d.compaction(id, parent, ts, raw, p)
	case (l.Type == "user" || l.Type == "assistant") && p.hasMessage:
		var msgs []any
		msgs, err = d.claudeMessages(l.Type, p, ts)
		if err == nil && len(msgs) == 0 {
			entries, err = d.custom(id, parent, ts, l.Type, raw)
		} else if err == nil {
			entries, err = d.messages(id, parent, ts, msgs, raw)
		}
	case (l.Type == "summary" && l.Summary != "") || (l.Type == "custom-title" && l.CustomTitle != ""):
		name := l.Summary
		if l.Type == "custom-title" {
			name = l.CustomTitle
		}
		entries, err = d.sessionName(id, parent, ts, name, raw)
	default:
		entries, err = d.custom(id, parent, ts, l.Type, raw)
	}
	if err != nil {
		return nil, err
	}
	d.added(entries)
	return entries, nil
}

// hasNullParent reports whether a line says "parentUuid": null (json
// leaves the pointer nil for null and for absent alike).
func hasNullParent(raw []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	v, ok := m["parentUuid"]
	return ok && string(v) == "null"
}

// claudeBlock is one block of a Claude message's content.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

type claudeMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stop_reason"`
	Usage      *struct {
		Input      int64 `json:"input_tokens"`
		Output     int64 `json:"output_tokens"`
		CacheRead  int64 `json:"cache_read_input_tokens"`
		CacheWrite int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// claudeMessages maps a user or assistant line's message to pi messages:
// none when nothing in it maps (the line is then kept as a custom entry),
// several when a user line carries several tool results.
func (d *claudeDecoder) claudeMessages(typ string, p *claudeParsed, ts stamp) ([]any, error) {
	if p.mErr != nil {
		return nil, fmt.Errorf("%w: message: %v", ErrBadLine, p.mErr)
	}
	m := &p.m
	if p.text != nil {
		if typ == "assistant" {
			return one(d.assistant(m, []piBlock{textBlock(*p.text)}, ts))
		}
		return one(piUser(*p.text, nil, ts))
	}
	if p.blocksErr != nil {
		return nil, fmt.Errorf("%w: message content: %v", ErrBadLine, p.blocksErr)
	}
	blocks := p.blocks
	if typ == "assistant" {
		var out []piBlock
		for _, b := range blocks {
			switch b.Type {
			case "text":
				out = append(out, textBlock(b.Text))
			case "thinking":
				out = append(out, piBlock{Type: "thinking", Thinking: ptr(b.Thinking), ThinkingSignature: b.Signature})
			case "tool_use":
				d.tools[b.ID] = b.Name
				out = append(out, toolCall(b.ID, b.Name, b.Input))
			}
		}
		if len(out) == 0 {
			return nil, nil
		}
		return one(d.assistant(m, out, ts))
	}
	// A user line: its prompt's blocks, then a tool result for each
	// tool_result block, in order.
	var msgs []any
	var prompt []piBlock
	for i, b := range blocks {
		if pb, ok := mediaBlock(&b); ok {
			prompt = append(prompt, pb)
			continue
		}
		switch b.Type {
		case "tool_result":
			content, err := p.results[i].content, p.results[i].err
			if err != nil {
				return nil, err
			}
			r, err := piToolResult(b.ToolUseID, d.tools[b.ToolUseID], content, b.IsError, ts)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, r)
		}
	}
	if len(prompt) > 0 {
		u, err := piUser("", prompt, ts)
		if err != nil {
			return nil, err
		}
		msgs = append([]any{u}, msgs...)
	}
	return msgs, nil
}

// resultContent maps a tool_result's content: a string, or text and
// image blocks.
func resultContent(raw json.RawMessage) ([]piBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return []piBlock{}, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []piBlock{textBlock(text)}, nil
	}
	var blocks []claudeBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("%w: tool result content: %v", ErrBadLine, err)
	}
	return mediaBlocks(blocks), nil
}

// mediaBlocks is what blocks of a tool result's content map to (never
// nil): its text and inline images.
func mediaBlocks(blocks []claudeBlock) []piBlock {
	out := []piBlock{}
	for i := range blocks {
		if pb, ok := mediaBlock(&blocks[i]); ok {
			out = append(out, pb)
		}
	}
	return out
}

// mediaBlock maps a text block, or an image given inline (base64), to
// pi's; ok is false for other blocks.
func mediaBlock(b *claudeBlock) (piBlock, bool) {
	switch {
	case b.Type == "text":
		return textBlock(b.Text), true
	case b.Type == "image" && b.Source != nil && b.Source.Type == "base64" && b.Source.Data != "":
		return piBlock{Type: "image", Data: b.Source.Data, MimeType: b.Source.MediaType}, true
	}
	return piBlock{}, false
}

// assistant is an assistant message as pi writes one for Anthropic's API.
func (d *claudeDecoder) assistant(m *claudeMessage, blocks []piBlock, ts stamp) (any, error) {
	a := piAssistant{
		Role: "assistant", Content: blocks, API: "anthropic-messages", Provider: "anthropic",
		Model: m.Model, StopReason: "stop", Timestamp: ts.ms,
	}
	if a.Model == "" {
		a.Model = "unknown"
	}
	switch m.StopReason {
	case "tool_use":
		a.StopReason = "toolUse"
	case "max_tokens":
		a.StopReason = "length"
	}
	if u := m.Usage; u != nil {
		a.Usage = piUsage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
			TotalTokens: u.Input + u.Output + u.CacheRead + u.CacheWrite}
	}
	return a, nil
}

// compaction is Claude Code's summary after a compact boundary: the
// boundary before it is kept as it is (a custom entry), and the summary
// line becomes the compaction, keeping nothing before it.
func (d *claudeDecoder) compaction(id, parent string, ts stamp, raw []byte, p *claudeParsed) ([]*session.Entry, error) {
	if p.mErr != nil {
		return nil, fmt.Errorf("%w: message: %v", ErrBadLine, p.mErr)
	}
	summary := ""
	if p.text != nil {
		summary = *p.text
	} else if p.blocksErr == nil {
		var parts []string
		for _, b := range p.blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		summary = strings.Join(parts, "\n")
	}
	e, err := d.compactionEntry(id, parent, ts, summary, d.preTokens, nil, raw)
	if err != nil {
		return nil, err
	}
	return []*session.Entry{e}, nil
}
