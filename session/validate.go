package session

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Bounds of the members ValidateFields checks. pi writes nothing near
// them; they exist so that no client can make one value the size of a
// reply page.
const (
	// MaxNameLen bounds names: session names, labels, custom types,
	// providers, models, tool names, thinking levels.
	MaxNameLen = 1024
	// MaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: token
	// counts beyond it do not survive pi's JSON.parse.
	MaxSafeInteger = 1<<53 - 1
	// MaxEpochMillis is the largest time a JavaScript Date holds.
	MaxEpochMillis = 8_640_000_000_000_000
)

// FieldError says which member of an entry ValidateFields refuses and why.
type FieldError struct {
	Entry  string // the entry's id ("" when it has none yet), or the session's
	Header bool   // the member is the header's

	// Pointer locates the member in the entry's JSON (RFC 6901), e.g.
	// "/message/timestamp".
	Pointer string
	Reason  string
}

func (e *FieldError) Error() string {
	if e.Header {
		return fmt.Sprintf("session: invalid header of %q: %s %s", e.Entry, e.Pointer, e.Reason)
	}
	if e.Entry == "" {
		return fmt.Sprintf("session: invalid entry: %s %s", e.Pointer, e.Reason)
	}
	return fmt.Sprintf("session: invalid entry %q: %s %s", e.Entry, e.Pointer, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidEntry) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidEntry }

// messageRoles are the agent message roles pi stores in message entries.
var messageRoles = map[string]bool{
	RoleUser: true, RoleAssistant: true, RoleToolResult: true, RoleCustom: true,
	RoleCompactionSummary: true, RoleBranchSummary: true, "bashExecution": true,
}

// thinkingLevels are pi's ThinkingLevel values.
var thinkingLevels = map[string]bool{"off": true, "minimal": true, "low": true, "medium": true, "high": true, "xhigh": true}

// stopReasons are pi's StopReason values.
var stopReasons = map[string]bool{"stop": true, "length": true, "toolUse": true, "error": true, "aborted": true}

// entryMembers are the members each known entry type defines (besides
// type, id, parentId and timestamp), with the kind of JSON value each
// holds ('"' string, 'b' boolean, '0' integer, '{', '[', '*' any). An
// Extra field of one of these names is that member holding another kind
// of value — or its zero, which decoders keep so that an explicit ""
// or false survives a round trip.
var entryMembers = map[EntryType]map[string]byte{
	TypeMessage:             {"message": '{'},
	TypeThinkingLevelChange: {"thinkingLevel": '"'},
	TypeModelChange:         {"provider": '"', "modelId": '"'},
	TypeActiveToolsChange:   {"activeTools": '['},
	TypeCompaction: {"summary": '"', "firstKeptEntryId": '"', "tokensBefore": '0', "details": '*', "fromHook": 'b',
		"retainedTail": '[', "usage": '{'},
	TypeBranchSummary: {"fromId": '"', "summary": '"', "details": '*', "fromHook": 'b'},
	TypeCustom:        {"customType": '"', "data": '*'},
	TypeCustomMessage: {"customType": '"', "content": '"', "display": 'b', "details": '*'},
	TypeLabel:         {"targetId": '"', "label": '"'},
	TypeSessionInfo:   {"name": '"'},
	TypeLeaf:          {},
}

// messageMembers are the members of a message of any role; bashMembers
// are the members of pi's bashExecution messages, which the model keeps in
// Extra.
var messageMembers = map[string]byte{
	"role": '"', "content": '"', "timestamp": '0', "api": '"', "provider": '"', "model": '"', "responseId": '"',
	"usage": '{', "stopReason": '"', "errorMessage": '"', "toolCallId": '"', "toolName": '"', "isError": 'b',
	"details": '*', "customType": '"', "display": 'b', "summary": '"', "tokensBefore": '0', "fromId": '"',
}

var bashMembers = map[string]string{
	"command": `"`, "output": `"`, "exitCode": `0n`, "cancelled": `tf`, "truncated": `tf`,
	"fullOutputPath": `"`, "excludeFromContext": `tf`,
}

var blockMembers = map[string]byte{
	"type": '"', "text": '"', "textSignature": '"', "thinking": '"', "thinkingSignature": '"', "redacted": 'b',
	"data": '"', "mimeType": '"', "id": '"', "name": '"', "thoughtSignature": '"', "arguments": '*',
}

var usageMembers = map[string]byte{"input": '0', "output": '0', "cacheRead": '0', "cacheWrite": '0', "totalTokens": '0', "cost": '{'}

var costMembers = map[string]byte{"input": '0', "output": '0', "cacheRead": '0', "cacheWrite": '0', "total": '0'}

// extra checks the Extra fields of an object whose known members are
// members: each must be an unknown member, or a known one's kept zero.
func (v *fieldCheck) extra(ptr, what string, fs []Field, members map[string]byte) {
	for _, f := range fs {
		kind, ok := members[f.Key]
		if !ok || keptZero(kind, f.Value) {
			continue
		}
		v.fail(ptr+"/"+f.Key, fmt.Sprintf("holds %s, not the kind of value %s has there", kindOf(f.Value), what))
	}
}

// keptZero reports whether r is the zero a decoder keeps for a member of
// that kind.
func keptZero(kind byte, r Raw) bool {
	switch string(r) {
	case `""`:
		return kind == '"'
	case "false":
		return kind == 'b'
	case "0":
		return kind == '0'
	}
	return false
}

// ValidateFields checks every member pi defines of a known entry type —
// its kind, its range, and the members the type requires — beyond what
// ValidateEntry checks. It is what every write applies (Tree.CheckBatch):
// whatever passes is written, and read back, by every backend and by pi.
// Loaders do not apply it, so files written by others still load.
// Entries of unknown types are checked only as ValidateEntry does.
func ValidateFields(e *Entry) error {
	if err := ValidateEntry(e); err != nil {
		return err
	}
	v := fieldCheck{id: e.ID}
	if _, err := time.Parse(time.RFC3339Nano, e.Timestamp); err != nil {
		v.fail("/timestamp", fmt.Sprintf("%q is not an ISO-8601 time such as 2025-01-04T00:59:36.639Z", clip(e.Timestamp)))
	}
	v.raws(e)
	members, known := entryMembers[e.Type]
	if !known {
		return v.err
	}
	for _, f := range e.Extra {
		switch f.Key {
		case "type", "id", "parentId", "timestamp":
			v.fail("/"+f.Key, "is set twice")
		}
	}
	v.extra("", "a "+string(e.Type)+" entry", e.Extra, members)
	switch e.Type {
	case TypeMessage:
		v.message("/message", e.Message)
	case TypeThinkingLevelChange:
		if !thinkingLevels[e.ThinkingLevel] {
			v.fail("/thinkingLevel", fmt.Sprintf("%q is not one of off, minimal, low, medium, high, xhigh", clip(e.ThinkingLevel)))
		}
	case TypeModelChange:
		v.name("/provider", e.Provider)
		v.name("/modelId", e.ModelID)
	case TypeActiveToolsChange:
		for i, t := range e.ActiveTools {
			v.name(fmt.Sprintf("/activeTools/%d", i), t)
		}
	case TypeCompaction:
		if e.FirstKeptEntryID == "" {
			v.fail("/firstKeptEntryId", "is required: the entry the kept context starts from")
		} else if err := ValidateID(e.FirstKeptEntryID); err != nil {
			v.fail("/firstKeptEntryId", err.Error())
		}
		v.count("/tokensBefore", e.TokensBefore)
		for i := range e.RetainedTail {
			v.message(fmt.Sprintf("/retainedTail/%d", i), &e.RetainedTail[i])
		}
		v.usage("/usage", e.Usage)
	case TypeBranchSummary:
		if e.FromID == "" {
			v.fail("/fromId", "is required: the leaf the branch was left from")
		} else if len(e.FromID) > MaxIDLen {
			v.fail("/fromId", fmt.Sprintf("is %d bytes (max %d)", len(e.FromID), MaxIDLen))
		}
	case TypeCustom:
		v.name("/customType", e.CustomType)
	case TypeCustomMessage:
		v.name("/customType", e.CustomType)
		if e.Content.IsZero() {
			v.fail("/content", "is required (a string or content blocks)")
		}
		v.content("/content", e.Content, false)
	case TypeLabel:
		if len(e.Label) > MaxNameLen {
			v.fail("/label", fmt.Sprintf("is %d bytes (max %d)", len(e.Label), MaxNameLen))
		}
	case TypeSessionInfo:
		if len(e.Name) > MaxNameLen {
			v.fail("/name", fmt.Sprintf("is %d bytes (max %d)", len(e.Name), MaxNameLen))
		}
	}
	return v.err
}

// raws checks every verbatim value as a strict reader takes it: no
// member name twice in an object, valid UTF-8. JSON.parse would accept
// either, but the service's replies, and readers in other languages, are
// strict: what is stored must read everywhere.
func (v *fieldCheck) raws(e *Entry) {
	check := func(ptr string, r Raw) {
		if r != nil && !jsontext.Value(r).IsValid() {
			v.fail(ptr, "is not strict JSON (a member name twice, or invalid UTF-8)")
		}
	}
	msg := func(ptr string, m *Message) {
		check(ptr+"/details", m.Details)
		for _, f := range m.Extra {
			check(ptr+"/"+f.Key, f.Value)
		}
		for i := range m.Content.Blocks {
			b := &m.Content.Blocks[i]
			check(fmt.Sprintf("%s/content/%d/arguments", ptr, i), b.Arguments)
			check(fmt.Sprintf("%s/content/%d", ptr, i), b.Verbatim)
			for _, f := range b.Extra {
				check(fmt.Sprintf("%s/content/%d/%s", ptr, i, f.Key), f.Value)
			}
		}
	}
	check("/details", e.Details)
	check("/data", e.Data)
	for _, f := range e.Extra {
		check("/"+f.Key, f.Value)
	}
	if e.Message != nil {
		msg("/message", e.Message)
	}
	for i := range e.RetainedTail {
		msg(fmt.Sprintf("/retainedTail/%d", i), &e.RetainedTail[i])
	}
	if e.Usage != nil {
		for _, f := range e.Usage.Extra {
			check("/usage/"+f.Key, f.Value)
		}
	}
}

// fieldCheck collects the first problem found.
type fieldCheck struct {
	id  string
	err error
}

func (v *fieldCheck) fail(ptr, reason string) {
	if v.err == nil {
		v.err = &FieldError{Entry: v.id, Pointer: ptr, Reason: reason}
	}
}

func (v *fieldCheck) name(ptr, s string) {
	switch {
	case strings.TrimSpace(s) == "":
		v.fail(ptr, "is required and may not be blank")
	case len(s) > MaxNameLen:
		v.fail(ptr, fmt.Sprintf("is %d bytes (max %d)", len(s), MaxNameLen))
	}
}

func (v *fieldCheck) count(ptr string, n int64) {
	if n < 0 || n > MaxSafeInteger {
		v.fail(ptr, fmt.Sprintf("is %d: a count must be 0..%d", n, int64(MaxSafeInteger)))
	}
}

func (v *fieldCheck) message(ptr string, m *Message) {
	if m == nil {
		v.fail(ptr, "is required")
		return
	}
	if !messageRoles[m.Role] {
		v.fail(ptr+"/role", fmt.Sprintf("%q is not a message role (user, assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary)", clip(m.Role)))
		return
	}
	if m.Timestamp < 0 || m.Timestamp > MaxEpochMillis {
		v.fail(ptr+"/timestamp", fmt.Sprintf("is %d: epoch milliseconds must be 0..%d", m.Timestamp, int64(MaxEpochMillis)))
	}
	extra := m.Extra
	if m.Role == "bashExecution" {
		extra = nil
		for _, f := range m.Extra {
			kinds, ok := bashMembers[f.Key]
			if !ok {
				extra = append(extra, f)
			} else if !strings.ContainsRune(kinds, rune(kindByte(f.Value))) {
				v.fail(ptr+"/"+f.Key, fmt.Sprintf("holds %s, not the kind of value a bashExecution message has there", kindOf(f.Value)))
			}
		}
	}
	v.extra(ptr, "a message", extra, messageMembers)
	switch m.Role {
	case RoleUser, RoleAssistant, RoleToolResult, RoleCustom:
		if m.Content.IsZero() {
			v.fail(ptr+"/content", "is required (a string or content blocks)")
		}
	}
	v.content(ptr+"/content", m.Content, m.Role == RoleAssistant)
	if m.StopReason != "" && !stopReasons[m.StopReason] {
		v.fail(ptr+"/stopReason", fmt.Sprintf("%q is not one of stop, length, toolUse, error, aborted", clip(m.StopReason)))
	}
	for _, f := range [...]struct{ k, s string }{{"provider", m.Provider}, {"model", m.Model}, {"api", m.API},
		{"toolName", m.ToolName}, {"toolCallId", m.ToolCallID}, {"customType", m.CustomType}} {
		if len(f.s) > MaxNameLen {
			v.fail(ptr+"/"+f.k, fmt.Sprintf("is %d bytes (max %d)", len(f.s), MaxNameLen))
		}
	}
	v.count(ptr+"/tokensBefore", m.TokensBefore)
	v.usage(ptr+"/usage", m.Usage)
}

func (v *fieldCheck) content(ptr string, c Content, assistant bool) {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		bp := fmt.Sprintf("%s/%d", ptr, i)
		if b.Verbatim != nil {
			v.fail(bp, fmt.Sprintf("holds %s: a content block is an object", kindOf(b.Verbatim)))
			return
		}
		switch b.Type {
		case BlockText, BlockThinking:
		case BlockImage:
			if b.Data == "" {
				v.fail(bp+"/data", "is required: the image as base64")
			}
			if !strings.HasPrefix(b.MimeType, "image/") || len(b.MimeType) > MaxNameLen {
				v.fail(bp+"/mimeType", fmt.Sprintf("%q is not an image type such as image/png", clip(b.MimeType)))
			}
		case BlockToolCall:
			if !assistant {
				v.fail(bp+"/type", "toolCall blocks belong in assistant messages")
			}
			v.name(bp+"/name", b.Name)
			if b.ID == "" || len(b.ID) > MaxNameLen {
				v.fail(bp+"/id", "is required (at most 1024 bytes)")
			}
			if b.Arguments != nil && kindByte(b.Arguments) != '{' {
				v.fail(bp+"/arguments", fmt.Sprintf("holds %s, not an object", kindOf(b.Arguments)))
			}
		default:
			v.fail(bp+"/type", fmt.Sprintf("%q is not a content block type (text, thinking, image, toolCall)", clip(b.Type)))
		}
		v.extra(bp, "a content block", b.Extra, blockMembers)
	}
}

func (v *fieldCheck) usage(ptr string, u *Usage) {
	if u == nil {
		return
	}
	for _, f := range [...]struct {
		k string
		n int64
	}{{"input", u.Input}, {"output", u.Output}, {"cacheRead", u.CacheRead}, {"cacheWrite", u.CacheWrite}, {"totalTokens", u.TotalTokens}} {
		v.count(ptr+"/"+f.k, f.n)
	}
	for _, f := range [...]struct {
		k string
		x float64
	}{{"input", u.Cost.Input}, {"output", u.Cost.Output}, {"cacheRead", u.Cost.CacheRead}, {"cacheWrite", u.Cost.CacheWrite}, {"total", u.Cost.Total}} {
		if math.IsNaN(f.x) || math.IsInf(f.x, 0) || f.x < 0 {
			v.fail(ptr+"/cost/"+f.k, fmt.Sprintf("is %v: a cost is a finite number ≥ 0", f.x))
		}
	}
	v.extra(ptr, "usage", u.Extra, usageMembers)
	v.extra(ptr+"/cost", "a cost", u.Cost.Extra, costMembers)
}

// kindByte is the first significant byte of a JSON value: '"', '{', '[',
// 't', 'f', 'n', or '0' for a number.
func kindByte(r Raw) byte {
	for _, c := range r {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return '0'
		}
		return c
	}
	return 0
}

// kindOf names a JSON value for an error: "a string", "the number 1.5".
func kindOf(r Raw) string {
	switch kindByte(r) {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '0':
		return "the number " + clip(string(r))
	}
	return "nothing"
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}

// Bounds of a header's members.
const (
	// MaxPathLen bounds cwd and parentSession.
	MaxPathLen = 4096
	// MaxMetadataLen bounds the free-form metadata object.
	MaxMetadataLen = 64 << 10
)

// ValidateHeader checks a header about to be written: an ISO timestamp,
// paths of at most MaxPathLen bytes, and metadata that is a JSON object
// (strict: no member twice) of at most MaxMetadataLen bytes. The session
// id is the backend's to check (its rules are the backend's).
func ValidateHeader(h *Header) error {
	v := fieldCheck{id: h.ID}
	if _, err := time.Parse(time.RFC3339Nano, h.Timestamp); err != nil {
		v.fail("/timestamp", fmt.Sprintf("%q is not an ISO-8601 time such as 2025-01-04T00:59:36.639Z", clip(h.Timestamp)))
	}
	for _, f := range [...]struct{ ptr, s string }{{"/cwd", h.Cwd}, {"/parentSession", h.ParentSession}} {
		if len(f.s) > MaxPathLen {
			v.fail(f.ptr, fmt.Sprintf("is %d bytes (max %d)", len(f.s), MaxPathLen))
		}
	}
	switch {
	case h.Metadata == nil:
	case len(h.Metadata) > MaxMetadataLen:
		v.fail("/metadata", fmt.Sprintf("is %d bytes (max %d)", len(h.Metadata), MaxMetadataLen))
	case kindByte(h.Metadata) != '{' || !jsontext.Value(h.Metadata).IsValid():
		v.fail("/metadata", "is not a JSON object (strict: no member twice, valid UTF-8)")
	}
	if fe, ok := v.err.(*FieldError); ok {
		fe.Header = true
	}
	return v.err
}
