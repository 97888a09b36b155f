package session

// Sizes: about how many bytes an entry holds in memory, counting its
// strings and raw members (what grows with what a client sends) and a
// fixed overhead for the structs around them. Caches bound themselves by
// it; it is an estimate, not an accounting of Go's allocations.

// entryOverhead approximates the headers, pointers and maps an entry
// costs besides its strings (the tree's index among them).
const entryOverhead = 256

// Size is about how many bytes e holds in memory.
func (e *Entry) Size() int {
	if e == nil {
		return 0
	}
	n := entryOverhead + len(e.ID) + len(e.ParentID) + len(e.Timestamp) + fieldsSize(e.Extra)
	if e.Message != nil {
		n += e.Message.size()
	}
	switch b := e.Body.(type) {
	case *Compaction:
		n += len(b.Summary) + len(b.FirstKeptEntryID) + len(b.Details)
		if b.SystemMessage != nil {
			n += b.SystemMessage.size()
		}
		for i := range b.RetainedTail {
			n += b.RetainedTail[i].size()
		}
	case *BranchSummary:
		n += len(b.FromID) + len(b.Summary) + len(b.Details)
	case *Custom:
		n += len(b.CustomType) + len(b.Data)
	case *CustomMessage:
		n += len(b.CustomType) + b.Content.size() + len(b.Details)
	case *Label:
		n += len(b.TargetID) + len(b.Label)
	case *NameChange:
		n += len(b.Name)
	case nil:
	default:
		n += 64 // the small bodies: a level, a model, a tool list
	}
	return n
}

func (m *Message) size() int {
	n := 64 + len(m.Role) + m.Content.size() + fieldsSize(m.Extra)
	switch b := m.Body.(type) {
	case *ToolResultFields:
		n += len(b.ToolCallID) + len(b.ToolName) + len(b.Details)
	case *CustomFields:
		n += len(b.CustomType) + len(b.Details)
	case *SummaryFields:
		n += len(b.Summary) + len(b.FromID)
	case nil:
	default:
		n += 128 // an assistant's model, usage and stop reason
	}
	return n
}

func (c Content) size() int {
	n := 0
	for i := range c.Blocks {
		b := &c.Blocks[i]
		n += 48 + len(b.Type) + len(b.Text) + fieldsSize(b.Extra)
		switch bb := b.Body.(type) {
		case *ThinkingBlock:
			n += len(bb.Thinking) + len(bb.ThinkingSignature)
		case *ImageBlock:
			n += len(bb.Data) + len(bb.MimeType)
		case *ToolCallBlock:
			n += len(bb.ID) + len(bb.Name) + len(bb.Arguments) + len(bb.ThoughtSignature)
		case *SignedText:
			n += len(bb.TextSignature)
		case *VerbatimBlock:
			n += len(bb.Value)
		}
	}
	return n
}

func fieldsSize(fs []Field) int {
	n := 0
	for _, f := range fs {
		n += 32 + len(f.Key) + len(f.Value)
	}
	return n
}

// Bytes is about how many bytes the tree's entries hold in memory (see
// Entry.Size); a partial tree counts the entries it has loaded.
func (t *Tree) Bytes() int64 { return t.bytes }
