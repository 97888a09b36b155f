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

// FormatTime formats t as TimeLayout in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

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
// that order back, so a line round-trips byte for byte. "" is the
// encoders' own order. Only codecs set and read it.
type Layout string

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

// Entry is one node of a session tree. Which fields apply depends on Type;
// the rest stay zero. Entries handed out by a Store must be treated as
// read-only: they are shared with the store's tree.
type Entry struct {
	Type      EntryType
	ID        string
	ParentID  string // "" for a root (null in JSON)
	Timestamp string // TimeLayout, as written

	// message
	Message *Message

	// thinking_level_change
	ThinkingLevel string

	// model_change
	Provider string
	ModelID  string

	// active_tools_change: the complete set of enabled tool names.
	ActiveTools []string

	// compaction and branch_summary
	Summary  string
	Details  Raw  // also custom_message
	FromHook bool // written only when true (or when the file had it)

	// compaction
	FirstKeptEntryID string
	// SystemMessage is the prompt and tool state in force at a
	// compaction (pi 1.6): the context starts with it.
	SystemMessage *Message
	TokensBefore  int64
	// RetainedTail, when set, is the verbatim tail of messages the compactor
	// kept; the context then uses it instead of walking from FirstKeptEntryID.
	RetainedTail []Message
	// Usage is what the summarising model call cost (compaction and
	// branch_summary), or the usage a usage entry records.
	Usage *Usage

	// usage: what kind of use it was ("cache_warm"), by which model;
	// Provider is the model's provider.
	Kind  string
	Model string
	Note  string

	// context_edit: TargetID's content in the context is replaced, or
	// the target removed (Edit.Remove). nil only on a malformed entry.
	Edit *ContextEdit

	// branch_summary: the leaf the branch was left from.
	FromID string

	// custom and custom_message
	CustomType string
	Data       Raw // custom
	Content    Content
	Display    bool // custom_message

	// label: TargetID is labelled with Label; an empty Label clears it.
	// context_edit: TargetID is the entry edited.
	TargetID string
	Label    string

	// session_info: the session's display name; empty clears it.
	Name string

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
	c.ActiveTools = append([]string(nil), e.ActiveTools...)
	if e.ActiveTools == nil {
		c.ActiveTools = nil
	}
	c.Details = cloneRaw(e.Details)
	c.Data = cloneRaw(e.Data)
	c.Content = e.Content.Clone()
	if e.RetainedTail != nil {
		c.RetainedTail = make([]Message, len(e.RetainedTail))
		for i := range e.RetainedTail {
			c.RetainedTail[i] = e.RetainedTail[i].Clone()
		}
	}
	c.Usage = e.Usage.Clone()
	if e.SystemMessage != nil {
		m := e.SystemMessage.Clone()
		c.SystemMessage = &m
	}
	c.Edit = e.Edit.Clone()
	c.Extra = cloneFields(e.Extra)
	return &c
}

// ContextEdit is a context_edit's replacement: null (Remove), or an
// object whose content replaces the target's.
type ContextEdit struct {
	Remove  bool
	Content Content
	Extra   []Field
	Layout  Layout
}

// Clone returns a deep copy of c (nil for nil).
func (c *ContextEdit) Clone() *ContextEdit {
	if c == nil {
		return nil
	}
	return &ContextEdit{Remove: c.Remove, Content: c.Content.Clone(), Extra: cloneFields(c.Extra), Layout: c.Layout}
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
