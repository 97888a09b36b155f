package transcript

import (
	"bytes"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	json "github.com/go-json-experiment/json/v1"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// What every format's decoder shares: the entries it made so far, and how
// it writes pi's entries (as JSON, decoded by codec like any pi line, so
// that they are held to the same rules).

type lines struct {
	format Format
	ids    map[string]bool
	last   string            // the last entry's id: where a line without a parent hangs
	tools  map[string]string // tool call id → tool name
	ts     stamp             // the last timestamp seen: for lines without one
	// later holds the checks left for later (checks.go), nil when
	// entries are checked as they are made.
	later *[]check
	// parsed: the line being decoded was read strictly whole (no member
	// name twice, valid UTF-8), so its entries' verbatim values need not
	// be read again (session.ValidateWriteParsed).
	parsed bool
	// viaJSON, set by tests only, makes every entry by writing it as JSON
	// and decoding it (pi_direct.go).
	viaJSON bool
}

func (l *lines) state() *lines { return l }

func newLines(f Format) lines {
	return lines{format: f, ids: map[string]bool{}, tools: map[string]string{}}
}

// stamp is a line's time: as pi writes an entry's, and in milliseconds
// for its message.
type stamp struct {
	iso string
	ms  int64
}

// stamp reads a line's timestamp; a line without one (or with one that is
// not a time) takes the last one seen, or the epoch.
func (l *lines) stamp(s string) stamp {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		l.ts = stamp{iso: session.FormatTime(t), ms: t.UnixMilli()}
	}
	if l.ts.iso == "" {
		return stamp{iso: session.FormatTime(time.Unix(0, 0))}
	}
	return l.ts
}

// idFor is a line's entry id: its own uuid when it has a usable one not
// given yet, else one made from its line number (stable while the file
// only grows, which is what a follow relies on).
func (l *lines) idFor(no int, uuid string) string {
	if uuid != "" && !l.ids[uuid] && session.ValidateID(uuid) == nil {
		return uuid
	}
	return fmt.Sprintf("line-%d", no)
}

func (l *lines) added(entries []*session.Entry) {
	for _, e := range entries {
		l.ids[e.ID] = true
		l.last = e.ID
	}
}

// lineKey is the member of a message entry that keeps its line.
func (f Format) lineKey() string {
	if f == FormatCodex {
		return "codex"
	}
	return "claudeCode"
}

// customPrefix starts the custom type of a line kept as a custom entry.
func (f Format) customPrefix() string { return string(f) + "/" }

type piBlock struct {
	Type              string          `json:"type"`
	Text              *string         `json:"text,omitempty"`
	Thinking          *string         `json:"thinking,omitempty"`
	ThinkingSignature string          `json:"thinkingSignature,omitempty"`
	Data              string          `json:"data,omitempty"`
	MimeType          string          `json:"mimeType,omitempty"`
	ID                string          `json:"id,omitempty"`
	Name              string          `json:"name,omitempty"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
}

func ptr(s string) *string { return &s }

func textBlock(s string) piBlock { return piBlock{Type: "text", Text: ptr(s)} }

// toolCall is a pi tool call; arguments that are not a JSON object (pi's
// arguments always are) are kept under "input".
func toolCall(id, name string, args json.RawMessage) piBlock {
	if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
		wrapped, _ := json.Marshal(map[string]json.RawMessage{"input": orNull(args)})
		args = wrapped
	}
	return piBlock{Type: "toolCall", ID: id, Name: name, Arguments: args}
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || !json.Valid(v) {
		return json.RawMessage("null")
	}
	return v
}

type piUsage struct {
	Input       int64  `json:"input"`
	Output      int64  `json:"output"`
	CacheRead   int64  `json:"cacheRead"`
	CacheWrite  int64  `json:"cacheWrite"`
	TotalTokens int64  `json:"totalTokens"`
	Cost        piCost `json:"cost"`
}

type piCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

type piAssistant struct {
	Role       string    `json:"role"`
	Content    []piBlock `json:"content"`
	API        string    `json:"api"`
	Provider   string    `json:"provider"`
	Model      string    `json:"model"`
	Usage      piUsage   `json:"usage"`
	StopReason string    `json:"stopReason"`
	Timestamp  int64     `json:"timestamp"`
}

// piUser is a user message: text as a string, or blocks.
func piUser(text string, blocks []piBlock, ts stamp) (any, error) {
	var content any = text
	if blocks != nil {
		content = blocks
	}
	return piUserMessage{"user", content, ts.ms}, nil
}

func piToolResult(callID, name string, content []piBlock, isError bool, ts stamp) (any, error) {
	if name == "" {
		name = "unknown" // its call is not in the file
	}
	return piToolResultMessage{"toolResult", callID, name, content, isError, ts.ms}, nil
}

func one(m any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	return []any{m}, nil
}

// entry is the pi entry id that v marshals to, decoded by codec and
// validated — or, when the checks are left for later (checks.go), an entry
// of that id, made and checked then.
func (l *lines) entry(id string, v any) (*session.Entry, error) {
	if l.later != nil {
		e := &session.Entry{ID: id}
		*l.later = append(*l.later, check{e: e, v: v, parsed: l.parsed})
		return e, nil
	}
	e, err := piEntry(v)
	if err != nil {
		return nil, err
	}
	if err := l.validate(e); err != nil {
		return nil, err
	}
	return e, nil
}

// messageEntry is the message entry of m: made directly when it can be
// (pi_direct.go), else as entry makes it.
func (l *lines) messageEntry(id, parent string, ts stamp, m any) (*session.Entry, error) {
	if d, ok := m.(directMessage); ok && l.parsed && !l.viaJSON && utf8.ValidString(parent) {
		if msg, ok := d.message(); ok {
			e := &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: ts.iso, Message: &msg}
			if err := l.validate(e); err != nil { // now, or left for later
				return nil, err
			}
			return e, nil
		}
	}
	return l.entry(id, struct {
		piHead
		Message any `json:"message"`
	}{head("message", id, parent, ts), m})
}

// piEntry decodes the pi entry v marshals to.
func piEntry(v any) (*session.Entry, error) {
	j, err := marshal(v)
	if err != nil {
		return nil, err
	}
	e, err := codec.DecodeEntry(j)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLine, err)
	}
	return e, nil
}

// marshal is json.Marshal without escaping <, > and & (pi writes them as
// they are, as JSON.stringify does).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

type piHead struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ParentID  any    `json:"parentId"`
	Timestamp string `json:"timestamp"`
}

func head(typ, id, parent string, ts stamp) piHead {
	h := piHead{Type: typ, ID: id, Timestamp: ts.iso}
	if parent != "" {
		h.ParentID = parent
	}
	return h
}

// messages are a line's pi messages as entries: the last takes the line's
// id and keeps the line; those before it (a line's several tool results)
// take the id with "~1", "~2"…, each the parent of the next.
func (l *lines) messages(id, parent string, ts stamp, msgs []any, raw []byte) ([]*session.Entry, error) {
	out := make([]*session.Entry, 0, len(msgs))
	for i, m := range msgs {
		eid := id
		if i < len(msgs)-1 {
			eid = fmt.Sprintf("%s~%d", id, i+1)
		}
		e, err := l.messageEntry(eid, parent, ts, m)
		if err == nil && eid == id {
			err = l.keep(e, raw)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		parent = eid
	}
	return out, nil
}

// custom keeps a line as it is: a custom entry whose data is the line.
// customLayout is the member order custom entries of imports have always
// had (that of the JSON they were once read back from): an import gives
// the bytes it gave before.
var customLayout = sync.OnceValue(func() session.Layout {
	e, err := codec.DecodeEntry([]byte(`{"type":"custom","id":"i","parentId":null,"timestamp":"t","customType":"c","data":0}`))
	if err != nil {
		panic("transcript: the custom entry's template does not decode: " + err.Error())
	}
	return e.Layout
})

// The entry is made as it is, not written as JSON and read back: the
// line is most of it, and was read once already.
func (l *lines) custom(id, parent string, ts stamp, typ string, raw []byte) ([]*session.Entry, error) {
	e := &session.Entry{Type: session.TypeCustom, ID: id, ParentID: parent, Timestamp: ts.iso, Layout: customLayout(),
		Body: &session.Custom{CustomType: l.format.customPrefix() + typ, Data: session.Raw(bytes.Clone(raw))}}
	if err := l.validate(e); err != nil {
		return nil, err
	}
	return []*session.Entry{e}, nil
}

func (l *lines) sessionName(id, parent string, ts stamp, name string, raw []byte) ([]*session.Entry, error) {
	e, err := l.entry(id, struct {
		piHead
		Name string `json:"name"`
	}{head("session_info", id, parent, ts), name})
	if err == nil {
		err = l.keep(e, raw)
	}
	if err != nil {
		return nil, err
	}
	return []*session.Entry{e}, nil
}

// compactionEntry is a compaction that keeps nothing before it: the
// context starts with its summary, then retained (the messages that stand
// for what came before, when the agent wrote them down) if not nil.
func (l *lines) compactionEntry(id, parent string, ts stamp, summary string, tokensBefore int64, retained []any, raw []byte) (*session.Entry, error) {
	e, err := l.entry(id, struct {
		piHead
		Summary          string `json:"summary"`
		FirstKeptEntryID string `json:"firstKeptEntryId"`
		TokensBefore     int64  `json:"tokensBefore"`
		RetainedTail     []any  `json:"retainedTail,omitempty"`
	}{head("compaction", id, parent, ts), summary, id, tokensBefore, retained})
	if err == nil {
		err = l.keep(e, raw)
	}
	return e, err
}
