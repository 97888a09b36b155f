package session

// A lean tree keeps of each entry what appends to it and a fork's
// selection read — ids, parents, types, timestamps, roles, targets — and
// not the content: messages' text and images, summaries, custom data,
// members this version does not know. Its counts (Stats, Info: the
// listing's) are of the whole entries, taken before they are made lean.
// A copy of a session too large to hold twice (a fork of a few hundred
// megabytes) selects its branch on one and writes through another, in
// memory that grows with the number of entries, not their size.
// Reads of content (Entries, Get, PathToRoot, contexts) see lean entries:
// a lean tree is for writing and selecting, never for reading back.

// NewLeanTree returns an empty lean tree of header h.
func NewLeanTree(h Header) *Tree {
	t := NewTree(h)
	t.lean = true
	return t
}

// Lean reports whether the tree keeps lean entries (NewLeanTree).
func (t *Tree) Lean() bool { return t.lean }

// leanEntryBytes estimates what a lean entry holds besides its ids.
const leanEntryBytes = 160

// leanOf is e without its content.
func leanOf(e *Entry) *Entry {
	c := &Entry{Type: e.Type, ID: e.ID, ParentID: e.ParentID, Timestamp: e.Timestamp}
	if m := e.Message; m != nil {
		c.Message = &Message{Role: m.Role, Timestamp: m.Timestamp, Body: m.Body}
	}
	switch b := e.Body.(type) {
	case nil:
	case *Compaction:
		c.Body = &Compaction{FirstKeptEntryID: b.FirstKeptEntryID, TokensBefore: b.TokensBefore, FromHook: b.FromHook, Usage: b.Usage}
	case *BranchSummary:
		c.Body = &BranchSummary{FromID: b.FromID, FromHook: b.FromHook, Usage: b.Usage}
	case *Custom:
		c.Body = &Custom{CustomType: b.CustomType}
	case *CustomMessage:
		c.Body = &CustomMessage{CustomType: b.CustomType, Display: b.Display}
	case *ContextEdit:
		edit := &ContextEdit{TargetID: b.TargetID}
		if b.Replacement != nil {
			edit.Replacement = &Replacement{Remove: b.Replacement.Remove}
		}
		c.Body = edit
	default: // labels, names, settings, usage records: small
		c.Body = b
	}
	return c
}
