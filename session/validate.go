package session

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bounds of the members ValidateWrite checks. pi writes nothing near
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

// FieldError says which member of an entry ValidateWrite refuses and why.
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

// extra checks the Extra fields of an object whose known members are
// members: each must be an unknown member, or a known one's kept zero; a
// member of verbatim must hold one of its kinds. refKind says which
// references the object's members may be (see stringSlot); "-": none, a
// reference there is ordinary data.
func (v *fieldCheck) extra(at path, what string, fs []Field, members map[string]byte, verbatim map[string]string, refKind string) {
	if what == "" {
		what = "an entry of its type"
	}
	for _, f := range fs {
		kind, ok := members[f.Key]
		if refKind != "-" && v.ref(at.at(f.Key), f.Value, ok && kind == '"' && stringSlot(refKind, f.Key), !ok || kind == '*') {
			continue
		}
		if !ok {
			if kinds, pi := verbatim[f.Key]; pi && !strings.ContainsRune(kinds, rune(kindByte(f.Value))) {
				v.fail(at.at(f.Key), fmt.Sprintf("holds %s, not the kind of value %s has there", kindOf(f.Value), what))
			}
			continue
		}
		if keptZero(kind, f.Value) || keptNumber(kind, f.Value) {
			continue
		}
		v.fail(at.at(f.Key), fmt.Sprintf("holds %s, not the kind of value %s has there", kindOf(f.Value), what))
	}
}

// ref checks a value that may be a blob reference and reports whether it
// is one: a string reference where str allows it, a JSON one where value
// does.
func (v *fieldCheck) ref(at path, r Raw, str, value bool) bool {
	ref, ok, err := ParseBlobRef(r)
	switch {
	case !ok:
		return false
	case err != nil:
		v.fail(at, err.Error())
	case ref.Encoding == BlobJSON && !value:
		v.fail(at, "may not be a reference to a JSON value")
	case ref.Encoding != BlobJSON && !str:
		v.fail(at, fmt.Sprintf("may not be a reference with encoding %s (only text, thinking, image data and plain content may)", ref.Encoding))
	}
	return true
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

// keptNumber reports whether r is a number kept as written where one
// belongs: any number for a member of kind 'n' (0.10, 1.0), an integral
// one for kind '0' (-0, 1e3, 1.0; never 1.5).
func keptNumber(kind byte, r Raw) bool {
	if kindByte(r) != '0' || kind != '0' && kind != 'n' {
		return false
	}
	f, err := strconv.ParseFloat(string(r), 64)
	return err == nil && (kind == 'n' || f == math.Trunc(f))
}

// path is a JSON pointer that is spelled out only when a check fails: a
// small value (no pointers), so a valid entry costs no allocation for
// pointers it never reports.
type path struct {
	keys  [maxDepth]string
	index [maxDepth]int // for a level whose key is ""
	n     int
}

// maxDepth is the deepest member checked (/retainedTail/0/content/1/arguments).
const maxDepth = 8

// root is the entry itself ("").
var root = path{}

func (p path) at(key string) path {
	if p.n < maxDepth {
		p.keys[p.n], p.n = key, p.n+1
	}
	return p
}

func (p path) item(i int) path {
	if p.n < maxDepth {
		p.keys[p.n], p.index[p.n], p.n = "", i, p.n+1
	}
	return p
}

func (p path) String() string {
	var b strings.Builder
	for i := range p.n {
		tok := p.keys[i]
		if tok == "" {
			tok = strconv.Itoa(p.index[i])
		}
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// fieldCheck collects the first problem found.
type fieldCheck struct {
	id  string
	err error
	// parsed: the verbatim values were read strictly already
	// (ValidateWriteParsed).
	parsed bool
}

func (v *fieldCheck) fail(at path, reason string) {
	if v.err == nil {
		v.err = &FieldError{Entry: v.id, Pointer: at.String(), Reason: reason}
	}
}

func (v *fieldCheck) name(at path, s string) {
	switch {
	case strings.TrimSpace(s) == "":
		v.fail(at, "is required and may not be blank")
	case len(s) > MaxNameLen:
		v.fail(at, fmt.Sprintf("is %d bytes (max %d)", len(s), MaxNameLen))
	}
}

func (v *fieldCheck) count(at path, n int64) {
	if n < 0 || n > MaxSafeInteger {
		v.fail(at, fmt.Sprintf("is %d: a count must be 0..%d", n, int64(MaxSafeInteger)))
	}
}

func (v *fieldCheck) message(at path, m *Message) {
	if m == nil {
		v.fail(at, "is required")
		return
	}
	if !messageRoles[m.Role] {
		v.fail(at.at("role"), fmt.Sprintf("%q is not a message role (user, assistant, toolResult, system, bashExecution, custom, branchSummary, compactionSummary)", clip(m.Role)))
		return
	}
	if m.Timestamp < 0 || m.Timestamp > MaxEpochMillis {
		v.fail(at.at("timestamp"), fmt.Sprintf("is %d: epoch milliseconds must be 0..%d", m.Timestamp, int64(MaxEpochMillis)))
	}
	v.extra(at, "a message", m.Extra, messageMembersOf(m.Role), messageVerbatim, "message")
	if !m.bodyFits() {
		v.fail(at, bodyMismatch("a "+clip(m.Role)+" message", m.Body, NewMessageBody(m.Role), "Message.Body"))
		return
	}
	switch m.Role {
	case RoleUser, RoleAssistant, RoleToolResult, RoleCustom, RoleSystem:
		if m.Content.IsZero() && !HasBlobRef(m.Extra, "content") {
			v.fail(at.at("content"), "is required (a string or content blocks)")
		}
	}
	v.content(at.at("content"), m.Content, blocksOf(m.Role))
	switch b := m.Body.(type) {
	case *AssistantFields:
		// Who answered, and how it ended: pi reads all three.
		v.name(at.at("provider"), b.Provider)
		v.name(at.at("model"), b.Model)
		if b.StopReason == "" {
			v.fail(at.at("stopReason"), "is required: how the answer ended (stop, length, toolUse, error, aborted, pending, deferred)")
		} else if !stopReasons[b.StopReason] {
			v.fail(at.at("stopReason"), fmt.Sprintf("%q is not one of stop, length, toolUse, error, aborted, pending, deferred", clip(b.StopReason)))
		}
		v.maxLen(at.at("api"), b.API)
		v.usage(at.at("usage"), b.Usage)
	case *ToolResultFields:
		v.maxLen(at.at("toolName"), b.ToolName)
		v.maxLen(at.at("toolCallId"), b.ToolCallID)
	case *CustomFields:
		v.maxLen(at.at("customType"), b.CustomType)
	case *SummaryFields:
		v.count(at.at("tokensBefore"), b.TokensBefore)
	}
}

// maxLen refuses a name longer than MaxNameLen.
func (v *fieldCheck) maxLen(at path, s string) {
	if len(s) > MaxNameLen {
		v.fail(at, fmt.Sprintf("is %d bytes (max %d)", len(s), MaxNameLen))
	}
}

// Which content blocks a message may hold.
const (
	blocksUser      = iota // text and images
	blocksAssistant        // text, thinking, tool calls and images
	blocksSystem           // text
)

func blocksOf(role string) int {
	switch role {
	case RoleAssistant:
		return blocksAssistant
	case RoleSystem:
		return blocksSystem
	}
	return blocksUser
}

func (v *fieldCheck) content(at path, c Content, blocks int) {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		bp := at.item(i)
		if b.Verbatim() != nil {
			v.fail(bp, fmt.Sprintf("holds %s: a content block is an object", kindOf(b.Verbatim())))
			return
		}
		if !b.bodyFits() {
			want := NewBlockBody(b.Type)
			if b.Type == BlockText {
				want = &SignedText{} // the one body a text block may have
			}
			v.fail(bp, bodyMismatch("a "+clip(b.Type)+" block", b.Body, want, "ContentBlock.Body"))
			return
		}
		if blocks == blocksSystem && b.Type != BlockText {
			v.fail(bp.at("type"), fmt.Sprintf("%q: a system message holds text blocks only", clip(b.Type)))
		}
		switch b.Type {
		case BlockText, BlockThinking:
		case BlockImage:
			img := b.Image()
			if img.Data == "" && !HasBlobRef(b.Extra, "data") {
				v.fail(bp.at("data"), "is required: the image as base64")
			}
			if !strings.HasPrefix(img.MimeType, "image/") || len(img.MimeType) > MaxNameLen {
				v.fail(bp.at("mimeType"), fmt.Sprintf("%q is not an image type such as image/png", clip(img.MimeType)))
			}
		case BlockToolCall:
			tc := b.ToolCall()
			if blocks != blocksAssistant {
				v.fail(bp.at("type"), "toolCall blocks belong in assistant messages")
			}
			v.name(bp.at("name"), tc.Name)
			if tc.ID == "" || len(tc.ID) > MaxNameLen {
				v.fail(bp.at("id"), "is required (at most 1024 bytes)")
			}
			if tc.Arguments != nil && kindByte(tc.Arguments) != '{' {
				v.fail(bp.at("arguments"), fmt.Sprintf("holds %s, not an object", kindOf(tc.Arguments)))
			}
		default:
			// A block of a type this version does not know (a later pi's) is
			// kept as it is and left unrendered, as entries of unknown types
			// are: only its name is checked.
			if !typeName(b.Type) {
				v.fail(bp.at("type"), fmt.Sprintf("%q is not a content block type (text, thinking, image, toolCall) nor a type name: 1 to %d letters, digits, '_' or '-'", clip(b.Type), MaxTypeLen))
			}
		}
		v.extra(bp, "a content block", b.Extra, blockMembersOf(b.Type), blockVerbatim, b.Type)
	}
}

func (v *fieldCheck) usage(at path, u *Usage) {
	if u == nil {
		return
	}
	for _, f := range [...]struct {
		k string
		n int64
	}{{"input", u.Input}, {"output", u.Output}, {"cacheRead", u.CacheRead}, {"cacheWrite", u.CacheWrite}, {"totalTokens", u.TotalTokens}} {
		v.count(at.at(f.k), f.n)
	}
	for _, f := range [...]struct {
		k string
		x float64
	}{{"input", u.Cost.Input}, {"output", u.Cost.Output}, {"cacheRead", u.Cost.CacheRead}, {"cacheWrite", u.Cost.CacheWrite}, {"total", u.Cost.Total}} {
		if math.IsNaN(f.x) || math.IsInf(f.x, 0) || f.x < 0 {
			v.fail(at.at("cost").at(f.k), fmt.Sprintf("is %v: a cost is a finite number ≥ 0", f.x))
		}
	}
	v.extra(at, "usage", u.Extra, usageMembers, usageVerbatim, "-")
	v.extra(at.at("cost"), "a cost", u.Cost.Extra, costMembers, costVerbatim, "-")
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
