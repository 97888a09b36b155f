package session

import (
	"fmt"
	"reflect"
)

// Body is the members of one entry type other than message: each known
// type has a struct of its own, so an entry holds its type's fields and
// no other's. The set is closed: only this package's types implement it.
type Body interface {
	// EntryType is the type of entry this body belongs to.
	EntryType() EntryType
	clone() Body
}

// ThinkingLevelChange is a thinking_level_change's member.
type ThinkingLevelChange struct {
	ThinkingLevel string
}

// ModelChange is a model_change's members.
type ModelChange struct {
	Provider string
	ModelID  string
}

// ActiveToolsChange is an active_tools_change's member: the complete set
// of enabled tool names.
type ActiveToolsChange struct {
	ActiveTools []string
}

// Compaction is a compaction's members.
type Compaction struct {
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int64
	Details          Raw
	FromHook         bool // written only when true (or when the file had it)
	// SystemMessage is the prompt and tool state in force at the
	// compaction (pi 1.6): the context starts with it.
	SystemMessage *Message
	// RetainedTail, when set, is the verbatim tail of messages the
	// compactor kept; the context then uses it instead of walking from
	// FirstKeptEntryID.
	RetainedTail []Message
	// Usage is what the summarising model call cost.
	Usage *Usage
}

// BranchSummary is a branch_summary's members.
type BranchSummary struct {
	// FromID is the leaf the branch was left from.
	FromID   string
	Summary  string
	Details  Raw
	FromHook bool
	Usage    *Usage
}

// Custom is a custom entry's members: an extension's own data, never in
// the context.
type Custom struct {
	CustomType string
	Data       Raw
}

// CustomMessage is a custom_message's members: an extension's message,
// in the context as a custom message.
type CustomMessage struct {
	CustomType string
	Content    Content
	Display    bool
	Details    Raw
}

// Label is a label's members: TargetID is labelled with Label; an empty
// Label clears it.
type Label struct {
	TargetID string
	Label    string
}

// NameChange is a session_info's member: the session's display name;
// empty clears it.
type NameChange struct {
	Name string
}

// UsageRecord is a usage entry's members: what a model call outside the
// conversation cost (Kind says what it was, e.g. "cache_warm"), by which
// model.
type UsageRecord struct {
	Kind     string
	Provider string
	Model    string
	Usage    *Usage
	Note     string
}

// ContextEdit is a context_edit's members: TargetID's content in the
// context is replaced, or the target removed (Replacement.Remove).
// Replacement is nil only on a malformed entry.
type ContextEdit struct {
	TargetID    string
	Replacement *Replacement
}

// EntryType implementations.
func (*ThinkingLevelChange) EntryType() EntryType { return TypeThinkingLevelChange }
func (*ModelChange) EntryType() EntryType         { return TypeModelChange }
func (*ActiveToolsChange) EntryType() EntryType   { return TypeActiveToolsChange }
func (*Compaction) EntryType() EntryType          { return TypeCompaction }
func (*BranchSummary) EntryType() EntryType       { return TypeBranchSummary }
func (*Custom) EntryType() EntryType              { return TypeCustom }
func (*CustomMessage) EntryType() EntryType       { return TypeCustomMessage }
func (*Label) EntryType() EntryType               { return TypeLabel }
func (*NameChange) EntryType() EntryType          { return TypeSessionInfo }
func (*UsageRecord) EntryType() EntryType         { return TypeUsage }
func (*ContextEdit) EntryType() EntryType         { return TypeContextEdit }

func (b *ThinkingLevelChange) clone() Body { c := *b; return &c }
func (b *ModelChange) clone() Body         { c := *b; return &c }
func (b *NameChange) clone() Body          { c := *b; return &c }
func (b *Label) clone() Body               { c := *b; return &c }

func (b *ActiveToolsChange) clone() Body {
	c := *b
	if b.ActiveTools != nil {
		c.ActiveTools = append([]string{}, b.ActiveTools...)
	}
	return &c
}

func (b *Compaction) clone() Body {
	c := *b
	c.Details = cloneRaw(b.Details)
	if b.SystemMessage != nil {
		m := b.SystemMessage.Clone()
		c.SystemMessage = &m
	}
	if b.RetainedTail != nil {
		c.RetainedTail = make([]Message, len(b.RetainedTail))
		for i := range b.RetainedTail {
			c.RetainedTail[i] = b.RetainedTail[i].Clone()
		}
	}
	c.Usage = b.Usage.Clone()
	return &c
}

func (b *BranchSummary) clone() Body {
	c := *b
	c.Details = cloneRaw(b.Details)
	c.Usage = b.Usage.Clone()
	return &c
}

func (b *Custom) clone() Body { c := *b; c.Data = cloneRaw(b.Data); return &c }

func (b *CustomMessage) clone() Body {
	c := *b
	c.Content = b.Content.Clone()
	c.Details = cloneRaw(b.Details)
	return &c
}

func (b *UsageRecord) clone() Body { c := *b; c.Usage = b.Usage.Clone(); return &c }

func (b *ContextEdit) clone() Body {
	c := *b
	c.Replacement = b.Replacement.Clone()
	return &c
}

// NewBody returns an empty body of type t, or nil for message and leaf
// entries and types this version does not know: decoders fill it.
func NewBody(t EntryType) Body {
	switch t {
	case TypeThinkingLevelChange:
		return &ThinkingLevelChange{}
	case TypeModelChange:
		return &ModelChange{}
	case TypeActiveToolsChange:
		return &ActiveToolsChange{}
	case TypeCompaction:
		return &Compaction{}
	case TypeBranchSummary:
		return &BranchSummary{}
	case TypeCustom:
		return &Custom{}
	case TypeCustomMessage:
		return &CustomMessage{}
	case TypeLabel:
		return &Label{}
	case TypeSessionInfo:
		return &NameChange{}
	case TypeUsage:
		return &UsageRecord{}
	case TypeContextEdit:
		return &ContextEdit{}
	}
	return nil
}

// Typed views of Body: each returns the body if it is of that type, else
// nil, so a caller reads e.Compaction().Summary after checking the type
// or the result.

// ThinkingLevelChange returns a thinking_level_change's body, else nil.
func (e *Entry) ThinkingLevelChange() *ThinkingLevelChange {
	b, _ := e.Body.(*ThinkingLevelChange)
	return b
}

// ModelChange returns a model_change's body, else nil.
func (e *Entry) ModelChange() *ModelChange { b, _ := e.Body.(*ModelChange); return b }

// ActiveToolsChange returns an active_tools_change's body, else nil.
func (e *Entry) ActiveToolsChange() *ActiveToolsChange { b, _ := e.Body.(*ActiveToolsChange); return b }

// Compaction returns a compaction's body, else nil.
func (e *Entry) Compaction() *Compaction { b, _ := e.Body.(*Compaction); return b }

// BranchSummary returns a branch_summary's body, else nil.
func (e *Entry) BranchSummary() *BranchSummary { b, _ := e.Body.(*BranchSummary); return b }

// Custom returns a custom entry's body, else nil.
func (e *Entry) Custom() *Custom { b, _ := e.Body.(*Custom); return b }

// CustomMessage returns a custom_message's body, else nil.
func (e *Entry) CustomMessage() *CustomMessage { b, _ := e.Body.(*CustomMessage); return b }

// Label returns a label's body, else nil.
func (e *Entry) Label() *Label { b, _ := e.Body.(*Label); return b }

// NameChange returns a session_info's body, else nil.
func (e *Entry) NameChange() *NameChange { b, _ := e.Body.(*NameChange); return b }

// UsageRecord returns a usage entry's body, else nil.
func (e *Entry) UsageRecord() *UsageRecord { b, _ := e.Body.(*UsageRecord); return b }

// ContextEdit returns a context_edit's body, else nil.
func (e *Entry) ContextEdit() *ContextEdit { b, _ := e.Body.(*ContextEdit); return b }

// TargetID is the entry a label or a context_edit applies to ("" for
// other types).
func (e *Entry) TargetID() string {
	switch b := e.Body.(type) {
	case *Label:
		return b.TargetID
	case *ContextEdit:
		return b.TargetID
	}
	return ""
}

// Summary is a compaction's or branch_summary's summary ("" for other
// types).
func (e *Entry) Summary() string {
	switch b := e.Body.(type) {
	case *Compaction:
		return b.Summary
	case *BranchSummary:
		return b.Summary
	}
	return ""
}

// bodyMismatch says what is wrong with the body got of what, when want
// (nil: none) is the body it should have.
func bodyMismatch(what string, got, want any, field string) string {
	switch {
	case want == nil:
		return fmt.Sprintf("%s takes no %s (members of its own beyond those are kept in Extra), not a %T", what, field, got)
	case isNil(got):
		return fmt.Sprintf("%s has none of its members: %s holds them (a %T)", what, field, want)
	}
	return fmt.Sprintf("%s has the members of another kind: %s is a %T, not a %T", what, field, got, want)
}

// isNil reports whether a body is nil, or a nil pointer of a body type.
func isNil(b any) bool { return b == nil || reflect.ValueOf(b).IsNil() }

// checkBody refuses an entry whose members do not match its type: a
// message entry without a message, a known type without its body or with
// another type's, a body or message on a type that has none.
func checkBody(e *Entry) error {
	if e.Type == TypeMessage {
		if e.Message == nil {
			return fmt.Errorf("%w: message entry %q has no message", ErrInvalidEntry, e.ID)
		}
	} else if e.Message != nil {
		return fmt.Errorf("%w: %s entry %q has a message (only message entries do)", ErrInvalidEntry, e.Type, e.ID)
	}
	want := NewBody(e.Type)
	switch {
	case want == nil && e.Body != nil:
		return fmt.Errorf("%w: %s entry %q has the members of a %s entry", ErrInvalidEntry, e.Type, e.ID, e.Body.EntryType())
	case want != nil && isNil(e.Body):
		return fmt.Errorf("%w: %s entry %q has none of its members (Entry.Body holds them: a %T)", ErrInvalidEntry, e.Type, e.ID, want)
	case want != nil && e.Body.EntryType() != e.Type:
		return fmt.Errorf("%w: %s entry %q has the members of a %s entry", ErrInvalidEntry, e.Type, e.ID, e.Body.EntryType())
	}
	return nil
}
