package session

// Context is what a model call needs from a session: the messages on the
// current branch (after the latest compaction) and the settings in force.
type Context struct {
	// Messages are the context's messages in order. Those of message
	// entries are the entries' own (shared with the store, as entries
	// are): treat them as read-only.
	Messages []*Message
	// Sources[i] is the id of the entry Messages[i] came from.
	Sources []string
	// ThinkingLevel is the last thinking_level_change on the branch, "off"
	// when there is none.
	ThinkingLevel string
	// Model is the last model_change or assistant message's model.
	Model *ModelRef
	// ActiveTools is the last active_tools_change on the branch; nil when
	// the branch never set one (the agent's defaults apply).
	ActiveTools []string
	// Compaction is the compaction entry that was applied, if any.
	Compaction *Entry
}

// ModelRef names a model.
type ModelRef struct {
	Provider string
	ModelID  string
}

// DefaultThinkingLevel is the thinking level of a branch that never set one.
const DefaultThinkingLevel = "off"

// EntryTransform rewrites a branch entry before the context is built from
// it. It returns the entry to use (a modified copy, never e changed in
// place) or nil to leave the entry out.
type EntryTransform func(e *Entry) *Entry

// Projector turns a custom entry of one customType into context messages;
// custom entries otherwise never reach the context.
type Projector func(e *Entry) []Message

// ContextOptions customise BuildContext. Session-level options (Config)
// and call-level options (ContextOption) are merged: session transforms
// run first, then call transforms; a call projector replaces the session
// projector of the same customType.
type ContextOptions struct {
	Transforms []EntryTransform
	Projectors map[string]Projector
}

func (o ContextOptions) merge(call ContextOptions) ContextOptions {
	out := ContextOptions{Transforms: append(append([]EntryTransform(nil), o.Transforms...), call.Transforms...)}
	if len(o.Projectors)+len(call.Projectors) > 0 {
		out.Projectors = make(map[string]Projector, len(o.Projectors)+len(call.Projectors))
		for k, v := range o.Projectors {
			out.Projectors[k] = v
		}
		for k, v := range call.Projectors {
			out.Projectors[k] = v
		}
	}
	return out
}

// BuildContext builds the context of a branch given root first (as
// Tree.Branch returns it), as pi 1.6's buildSessionProjection does. It is
// linear in the length of the branch.
//
// The settings come from the whole branch. The entries that give messages
// are the branch's, or after a compaction (the latest) the compaction,
// then the entries from its first kept entry to it (system messages
// aside: the compaction carries the system prompt in force), then those
// after it. A context_edit among those entries replaces or removes its
// target's content (the last edit of a target wins); an older compaction
// among them gives nothing.
func BuildContext(branch []*Entry, opts ContextOptions) Context {
	if len(opts.Transforms) > 0 {
		branch = transformBranch(branch, opts.Transforms)
	}
	c := Context{ThinkingLevel: DefaultThinkingLevel}
	compactionAt := -1
	edits := 0
	// The model is the last that set one: made once, not once for every
	// assistant message (half the allocations of a long path).
	var model *Entry
	for i, e := range branch {
		switch e.Type {
		case TypeThinkingLevelChange:
			if b := e.ThinkingLevelChange(); b != nil {
				c.ThinkingLevel = b.ThinkingLevel
			}
		case TypeModelChange:
			if e.ModelChange() != nil {
				model = e
			}
		case TypeMessage:
			if m := e.Message; m != nil && m.Assistant() != nil {
				model = e
			}
		case TypeActiveToolsChange:
			if b := e.ActiveToolsChange(); b != nil {
				c.ActiveTools = b.ActiveTools
			}
		case TypeCompaction:
			if e.Compaction() != nil {
				compactionAt = i
			}
		case TypeContextEdit:
			edits++
		}
	}
	switch {
	case model == nil:
	case model.Type == TypeModelChange:
		b := model.ModelChange()
		c.Model = &ModelRef{Provider: b.Provider, ModelID: b.ModelID}
	default:
		a := model.Message.Assistant()
		c.Model = &ModelRef{Provider: a.Provider, ModelID: a.Model}
	}
	p := projection{opts: opts}
	if compactionAt < 0 {
		if edits > 0 {
			p.edits = editsOf(branch)
		}
		c.Messages = make([]*Message, 0, len(branch))
		c.Sources = make([]string, 0, len(branch))
		for _, e := range branch {
			p.emit(&c, e)
		}
		return c
	}
	comp := branch[compactionAt]
	c.Compaction = comp
	cb := comp.Compaction()
	var kept []*Entry
	if cb.RetainedTail == nil {
		for i, e := range branch[:compactionAt] {
			if e.ID == cb.FirstKeptEntryID {
				kept = branch[i:compactionAt]
				break
			}
		}
	}
	after := branch[compactionAt+1:]
	if edits > 0 {
		p.edits = editsOf(kept, after)
	}
	p.compaction(&c, comp)
	for i := range cb.RetainedTail {
		c.push(comp.ID, &cb.RetainedTail[i])
	}
	for _, e := range kept {
		if e.Type == TypeMessage && e.Message != nil && e.Message.Role == RoleSystem {
			continue
		}
		p.emit(&c, e)
	}
	for _, e := range after {
		p.emit(&c, e)
	}
	return c
}

func (c *Context) push(id string, m *Message) {
	c.Messages = append(c.Messages, m)
	c.Sources = append(c.Sources, id)
}

func transformBranch(branch []*Entry, ts []EntryTransform) []*Entry {
	out := make([]*Entry, 0, len(branch))
	for _, e := range branch {
		for _, t := range ts {
			if e = t(e); e == nil {
				break
			}
		}
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

func epochMillis(ts string) int64 {
	t := parseTime(ts)
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
