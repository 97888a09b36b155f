package session

import "time"

// EntryType names the kind of an entry. The values are the "type" strings of
// pi's v3 session files; TypeLeaf and TypeActiveToolsChange are sessionlog's
// own and written in the same style.
type EntryType string

// Entry types.
const (
	TypeMessage             EntryType = "message"
	TypeThinkingLevelChange EntryType = "thinking_level_change"
	TypeModelChange         EntryType = "model_change"
	TypeActiveToolsChange   EntryType = "active_tools_change"
	TypeCompaction          EntryType = "compaction"
	TypeBranchSummary       EntryType = "branch_summary"
	TypeCustom              EntryType = "custom"
	TypeCustomMessage       EntryType = "custom_message"
	TypeLabel               EntryType = "label"
	TypeSessionInfo         EntryType = "session_info"
	TypeLeaf                EntryType = "leaf"
	// TypeUsage records what a model call outside the conversation cost
	// (pi 1.6's appendUsage); it never reaches the context.
	TypeUsage EntryType = "usage"
	// TypeContextEdit replaces or removes an earlier entry's content in
	// the context of the branches below it (pi 1.6's appendContextEdit).
	TypeContextEdit EntryType = "context_edit"
	// TypeSession is the header's type; it is never an Entry's type.
	TypeSession EntryType = "session"
)

// KnownTypes lists every entry type this version understands. Entries of
// other types are kept verbatim (see Entry.Extra) and take part in the tree
// like any other entry, but never in the context.
var KnownTypes = []EntryType{
	TypeMessage, TypeThinkingLevelChange, TypeModelChange, TypeActiveToolsChange,
	TypeCompaction, TypeBranchSummary, TypeCustom, TypeCustomMessage, TypeLabel,
	TypeSessionInfo, TypeLeaf, TypeUsage, TypeContextEdit,
}

// Known reports whether t is one of KnownTypes.
func (t EntryType) Known() bool {
	for _, k := range KnownTypes {
		if k == t {
			return true
		}
	}
	return false
}

// CurrentVersion is the session file format version sessionlog writes.
const CurrentVersion = 3

// TimeLayout is how entry and header timestamps are written: ISO-8601 in
// UTC with milliseconds, exactly as JavaScript's Date.toISOString does.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t as TimeLayout in UTC. Every append stamps its
// entry, so the common years are written by hand: time.Format parses its
// layout each call, a sixth of an append's own time in the session layer.
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(TimeLayout)
	}
	hour, min, sec := t.Clock()
	var b [24]byte
	put := func(i, v, n int) {
		for j := i + n - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, min, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond()/1e6, 3)
	b[23] = 'Z'
	return string(b[:])
}

// Raw is one JSON value kept verbatim (tool arguments, details, custom data,
// unknown fields). A nil Raw means absent; the JSON literal null is
// Raw("null").
type Raw []byte

// Field is a member the model does not know, kept so that files written by
// newer versions round-trip without loss. Extra fields are written after the
// known ones; a known field that is set wins over an Extra field of the same
// key.
type Field struct {
	Key   string
	Value Raw
}

// Layout is the order of an object's members as read, where it differs
// from the order encoders write them in (pi adds an assistant message's
// responseId and durationMs after its timestamp): encoders then write
// that order back, so a line round-trips byte for byte. The zero Layout
// is the encoders' own order. Only codecs set and read it. It is one
// pointer: most objects have none, and those that have one share it.
type Layout struct{ order *string }

// NewLayout returns the layout whose order codecs spell as order (""
// gives the zero Layout).
func NewLayout(order string) Layout {
	if order == "" {
		return Layout{}
	}
	return Layout{order: &order}
}

// String is the order as given to NewLayout ("" for the zero Layout).
func (l Layout) String() string {
	if l.order == nil {
		return ""
	}
	return *l.order
}

// Header is the first line of a session: its identity and provenance.
type Header struct {
	Version   int
	ID        string
	Timestamp string // TimeLayout, as written
	Cwd       string
	// ParentSession locates the session this one was forked from, the
	// way its repository does: Repo.Open of that repository opens it. pi
	// and the file repository write the parent's file path (pi's format);
	// the stream, which has no files, the parent's id. Kept verbatim.
	ParentSession string
	Metadata      Raw // free-form JSON object (sessionlog's own field)
	Extra         []Field
}

// Entry is one node of a session tree: the members every entry has, a
// message entry's Message, and every other known type's own members in a
// Body of that type. Entries handed out by a Store must be treated as
// read-only: they are shared with the store's tree.
//
// Each type keeps only its own members (a layout per type): a message
// entry is 128 bytes and its message, not the union of every type's
// fields.
type Entry struct {
	Type      EntryType
	ID        string
	ParentID  string // "" for a root (null in JSON)
	Timestamp string // TimeLayout, as written

	// Message is a message entry's message; nil for every other type (and
	// on a malformed message entry).
	Message *Message

	// Body holds the members of the other known types: *Compaction for a
	// compaction, *BranchSummary, *ThinkingLevelChange, *ModelChange,
	// *ActiveToolsChange, *Custom, *CustomMessage, *Label, *NameChange,
	// *UsageRecord and *ContextEdit for theirs. nil for message and leaf
	// entries and for types this version does not know (their members are
	// in Extra); a Body of another type than Type is refused by
	// ValidateWrite.
	Body Body

	Extra  []Field
	Layout Layout
}

// IsRoot reports whether the entry has no parent.
func (e *Entry) IsRoot() bool { return e.ParentID == "" }

// Time parses the entry timestamp. It returns the zero time if the
// timestamp is not ISO-8601.
func (e *Entry) Time() time.Time { return parseTime(e.Timestamp) }

// Clone returns a deep copy of e whose slices are not shared.
func (e *Entry) Clone() *Entry {
	c := *e
	if e.Message != nil {
		m := e.Message.Clone()
		c.Message = &m
	}
	if e.Body != nil {
		c.Body = e.Body.clone()
	}
	c.Extra = cloneFields(e.Extra)
	return &c
}

// Replacement is a context_edit's replacement: null (Remove), or an
// object whose content replaces the target's.
type Replacement struct {
	Remove  bool
	Content Content
	Extra   []Field
	Layout  Layout
}

// Clone returns a deep copy of c (nil for nil).
func (c *Replacement) Clone() *Replacement {
	if c == nil {
		return nil
	}
	return &Replacement{Remove: c.Remove, Content: c.Content.Clone(), Extra: cloneFields(c.Extra), Layout: c.Layout}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func cloneRaw(r Raw) Raw {
	if r == nil {
		return nil
	}
	return append(Raw(nil), r...)
}

func cloneFields(fs []Field) []Field {
	if fs == nil {
		return nil
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field{Key: f.Key, Value: cloneRaw(f.Value)}
	}
	return out
}
