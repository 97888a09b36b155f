package session

// projection turns the entries that give a context messages into them,
// with the context edits among those entries applied.
type projection struct {
	opts ContextOptions
	// edits maps an entry's id to the replacement of its last
	// context_edit.
	edits map[string]*Replacement
}

// editsOf maps each target to its last context_edit among the entries.
func editsOf(lists ...[]*Entry) map[string]*Replacement {
	m := map[string]*Replacement{}
	for _, l := range lists {
		for _, e := range l {
			if b := e.ContextEdit(); b != nil && b.Replacement != nil {
				m[b.TargetID] = b.Replacement
			}
		}
	}
	return m
}

// compaction adds what the applied compaction gives: the system message
// it carries, then its summary.
func (p *projection) compaction(c *Context, comp *Entry) {
	edit := p.edits[comp.ID]
	if edit != nil && edit.Remove {
		return
	}
	b := comp.Compaction()
	if b.SystemMessage != nil {
		c.push(comp.ID, withContent(b.SystemMessage))
	}
	c.push(comp.ID, &Message{
		Role:      RoleCompactionSummary,
		Body:      &SummaryFields{Summary: b.Summary, TokensBefore: b.TokensBefore},
		Timestamp: epochMillis(comp.Timestamp),
	})
}

// emit adds the messages an entry gives, as pi's sessionEntryToContextMessages
// does, edited as its last context_edit says.
func (p *projection) emit(c *Context, e *Entry) {
	edit := p.edits[e.ID]
	if edit != nil && edit.Remove {
		return
	}
	add := func(m *Message) {
		if edit != nil {
			m = edited(m, edit)
		}
		c.push(e.ID, m)
	}
	if e.Message != nil {
		if e.Type == TypeMessage {
			add(withContent(e.Message))
		}
		return
	}
	switch b := e.Body.(type) {
	case *CustomMessage:
		if e.Type != TypeCustomMessage {
			return
		}
		m := &Message{
			Role:      RoleCustom,
			Content:   b.Content,
			Body:      &CustomFields{CustomType: b.CustomType, Display: b.Display, Details: b.Details},
			Timestamp: epochMillis(e.Timestamp),
		}
		// Content stored apart goes with the message, to be resolved
		// there (see BlobRef).
		for _, f := range e.Extra {
			if f.Key == "content" && HasBlobRef(e.Extra, "content") {
				m.Extra = []Field{f}
			}
		}
		if m.Content.IsZero() && m.Extra == nil {
			m.Content = BlocksContent() // pi: entry.content ?? []
		}
		add(m)
	case *BranchSummary:
		if b.Summary != "" && e.Type == TypeBranchSummary {
			add(&Message{
				Role:      RoleBranchSummary,
				Body:      &SummaryFields{Summary: b.Summary, FromID: b.FromID},
				Timestamp: epochMillis(e.Timestamp),
			})
		}
	case *Custom:
		if pr := p.opts.Projectors[b.CustomType]; pr != nil && e.Type == TypeCustom {
			ms := pr(e)
			for i := range ms {
				add(&ms[i])
			}
		}
	}
}

// withContent is m, or a copy with the content pi gives a message stored
// without one: [] for user, assistant and tool results, "" for system.
func withContent(m *Message) *Message {
	if !m.Content.IsZero() || HasBlobRef(m.Extra, "content") {
		return m
	}
	switch m.Role {
	case RoleUser, RoleAssistant, RoleToolResult:
		c := *m
		c.Content = BlocksContent()
		return &c
	case RoleSystem:
		c := *m
		c.Content = TextContent("")
		return &c
	}
	return m
}

// edited is m with its content replaced as edit says, for the roles whose
// content pi edits (user, assistant, toolResult, custom); other messages
// (summaries, system, bash) keep theirs. A string replacing an assistant
// or tool result's content becomes one text block, as pi makes it.
func edited(m *Message, edit *Replacement) *Message {
	switch m.Role {
	case RoleUser, RoleAssistant, RoleToolResult, RoleCustom:
	default:
		return m
	}
	c := *m
	c.Content = edit.Content
	if (m.Role == RoleAssistant || m.Role == RoleToolResult) && edit.Content.Plain {
		c.Content = Content{Blocks: edit.Content.Blocks}
	}
	// The content stored apart, if any, is replaced too.
	if HasBlobRef(m.Extra, "content") {
		c.Extra = nil
		for _, f := range m.Extra {
			if f.Key != "content" {
				c.Extra = append(c.Extra, f)
			}
		}
	}
	return &c
}
