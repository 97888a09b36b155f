package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Clock tells the time. Inject a fixed or stepping clock in tests.
type Clock interface{ Now() time.Time }

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now implements Clock.
func (f ClockFunc) Now() time.Time { return f() }

// IDSource makes new entry ids. Ids need only be unique within a session;
// Session retries on the rare collision.
type IDSource interface{ NewID() string }

// IDFunc adapts a function to IDSource.
type IDFunc func() string

// NewID implements IDSource.
func (f IDFunc) NewID() string { return f() }

// Config holds what a Session needs besides its store. package system
// provides the wall clock and random ids.
type Config struct {
	Clock Clock
	IDs   IDSource
	// Context holds session-level entry transforms and custom-entry
	// projectors, merged with those of each BuildContext call.
	Context ContextOptions
}

// Validate reports a missing clock or id source.
func (c Config) Validate() error {
	switch {
	case c.Clock == nil:
		return fmt.Errorf("%w: no Clock", ErrInvalidConfig)
	case c.IDs == nil:
		return fmt.Errorf("%w: no IDSource", ErrInvalidConfig)
	}
	return nil
}

// Session is the API agents use on one session: it builds entries, chains
// them onto the leaf and appends them to the store.
type Session struct {
	store Store
	cfg   Config
}

// New returns a Session over store.
func New(store Store, cfg Config) (*Session, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil Store", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Session{store: store, cfg: cfg}, nil
}

// Store returns the session's store.
func (s *Session) Store() Store { return s.store }

// Header returns the session header.
func (s *Session) Header(ctx context.Context) (Header, error) { return s.store.Header(ctx) }

// Leaf returns the current leaf id.
func (s *Session) Leaf(ctx context.Context) (string, error) { return s.store.Leaf(ctx) }

// Entry returns one entry.
func (s *Session) Entry(ctx context.Context, id string) (*Entry, error) { return s.store.Get(ctx, id) }

const maxIDTries = 16

// newID returns an id not yet used in the session.
func (s *Session) newID(ctx context.Context) (string, error) {
	for range maxIDTries {
		id := s.cfg.IDs.NewID()
		if err := ValidateID(id); err != nil {
			return "", fmt.Errorf("session: id source: %w", err)
		}
		used, err := s.used(ctx, id)
		if err != nil {
			return "", err
		}
		if !used {
			return id, nil
		}
	}
	return "", fmt.Errorf("session: id source gave %d ids already in use", maxIDTries)
}

func (s *Session) used(ctx context.Context, id string) (bool, error) {
	if c, ok := s.store.(IDChecker); ok {
		return c.Has(ctx, id)
	}
	_, err := s.store.Get(ctx, id)
	if errors.Is(err, ErrEntryNotFound) {
		return false, nil
	}
	return err == nil, err
}

// append fills in id, parent (the leaf unless set) and timestamp, and
// stores e.
func (s *Session) append(ctx context.Context, e *Entry, parentSet bool) (*Entry, error) {
	var err error
	if e.ID == "" {
		if e.ID, err = s.newID(ctx); err != nil {
			return nil, err
		}
	}
	if !parentSet {
		if e.ParentID, err = s.store.Leaf(ctx); err != nil {
			return nil, err
		}
	}
	if e.Timestamp == "" {
		e.Timestamp = FormatTime(s.cfg.Clock.Now())
	}
	if err := s.store.Append(ctx, e); err != nil {
		return nil, err
	}
	return e, nil
}

// AppendMessage appends a user, assistant or tool-result message. A zero
// Timestamp is set from the clock.
func (s *Session) AppendMessage(ctx context.Context, m Message) (*Entry, error) {
	if m.Role == "" {
		return nil, fmt.Errorf("%w: message has no role", ErrInvalidEntry)
	}
	if m.Timestamp == 0 {
		m.Timestamp = s.cfg.Clock.Now().UnixMilli()
	}
	return s.append(ctx, &Entry{Type: TypeMessage, Message: &m}, false)
}

// AppendThinkingLevelChange records a new thinking level ("off", "low", …).
func (s *Session) AppendThinkingLevelChange(ctx context.Context, level string) (*Entry, error) {
	return s.append(ctx, &Entry{Type: TypeThinkingLevelChange, Body: &ThinkingLevelChange{ThinkingLevel: level}}, false)
}

// AppendModelChange records a switch of model.
func (s *Session) AppendModelChange(ctx context.Context, provider, modelID string) (*Entry, error) {
	return s.append(ctx, &Entry{Type: TypeModelChange, Body: &ModelChange{Provider: provider, ModelID: modelID}}, false)
}

// AppendActiveToolsChange records the complete set of enabled tools.
func (s *Session) AppendActiveToolsChange(ctx context.Context, tools []string) (*Entry, error) {
	if tools == nil {
		tools = []string{}
	}
	for _, t := range tools {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("%w: empty tool name", ErrInvalidEntry)
		}
	}
	return s.append(ctx, &Entry{Type: TypeActiveToolsChange, Body: &ActiveToolsChange{ActiveTools: append([]string{}, tools...)}}, false)
}

// AppendCompaction appends a compaction: c is the new entry's body (the
// caller's is not kept). FirstKeptEntryID, when set, must be
// on the current branch; when empty (and no RetainedTail is given) nothing
// before the compaction is kept, which is written as pi reads it: the
// compaction names itself as the first kept entry.
func (s *Session) AppendCompaction(ctx context.Context, c Compaction) (*Entry, error) {
	if c.FirstKeptEntryID != "" {
		leaf, err := s.store.Leaf(ctx)
		if err != nil {
			return nil, err
		}
		path, err := s.store.PathToRoot(ctx, leaf)
		if err != nil {
			return nil, err
		}
		on := false
		for _, e := range path {
			if e.ID == c.FirstKeptEntryID {
				on = true
				break
			}
		}
		if !on {
			return nil, &TargetError{Op: "compaction", ID: c.FirstKeptEntryID, Reason: "is not on the current branch"}
		}
	}
	e := &Entry{Type: TypeCompaction, Body: &c}
	if c.FirstKeptEntryID == "" {
		id, err := s.newID(ctx)
		if err != nil {
			return nil, err
		}
		e.ID, c.FirstKeptEntryID = id, id
	}
	return s.append(ctx, e, false)
}

// AppendCustom appends extension state that never reaches the context
// (unless a Projector for its customType is given).
func (s *Session) AppendCustom(ctx context.Context, customType string, data Raw) (*Entry, error) {
	return s.append(ctx, &Entry{Type: TypeCustom, Body: &Custom{CustomType: customType, Data: data}}, false)
}

// AppendCustomMessage appends an extension message.
func (s *Session) AppendCustomMessage(ctx context.Context, m CustomMessage) (*Entry, error) {
	if m.Content.IsZero() {
		m.Content = TextContent("")
	}
	return s.append(ctx, &Entry{Type: TypeCustomMessage, Body: &m}, false)
}

// SetLabel labels an entry; an empty label clears it.
func (s *Session) SetLabel(ctx context.Context, targetID, label string) (*Entry, error) {
	t, err := s.store.Get(ctx, targetID)
	if errors.Is(err, ErrEntryNotFound) {
		return nil, &TargetError{Op: "label", ID: targetID, Reason: reasonMissing}
	}
	if err != nil {
		return nil, err
	}
	if t.Type == TypeLeaf {
		return nil, &TargetError{Op: "label", ID: targetID, Reason: "is a leaf marker"}
	}
	return s.append(ctx, &Entry{Type: TypeLabel, Body: &Label{TargetID: targetID, Label: strings.TrimSpace(label)}}, false)
}

// SetName names the session; an empty name clears it.
func (s *Session) SetName(ctx context.Context, name string) (*Entry, error) {
	return s.append(ctx, &Entry{Type: TypeSessionInfo, Body: &NameChange{Name: oneLineName(name)}}, false)
}

// MoveOption configures MoveTo.
type MoveOption func(*moveConfig)

type moveConfig struct {
	summary  string
	details  Raw
	fromHook bool
	withSum  bool
}

// WithBranchSummary records a summary of the branch being left, as a child
// of the target; the summary becomes the new leaf.
func WithBranchSummary(summary string, details Raw, fromHook bool) MoveOption {
	return func(c *moveConfig) {
		c.summary, c.details, c.fromHook, c.withSum = summary, details, fromHook, true
	}
}

// MoveTo moves the leaf to targetID ("" moves it before the first entry,
// giving an empty context) so that the next append starts a new branch
// there. The move is persisted as a leaf entry, or, with a branch summary,
// as the summary entry. It returns the entry written, or nil when the leaf
// is already there and there is no summary to write.
func (s *Session) MoveTo(ctx context.Context, targetID string, opts ...MoveOption) (*Entry, error) {
	var mc moveConfig
	for _, o := range opts {
		o(&mc)
	}
	if targetID != "" {
		t, err := s.store.Get(ctx, targetID)
		if errors.Is(err, ErrEntryNotFound) {
			return nil, &TargetError{Op: "move", ID: targetID, Reason: reasonMissing}
		}
		if err != nil {
			return nil, err
		}
		if t.Type == TypeLeaf {
			return nil, &TargetError{Op: "move", ID: targetID, Reason: "is a leaf marker, not a conversation entry"}
		}
	}
	leaf, err := s.store.Leaf(ctx)
	if err != nil {
		return nil, err
	}
	if mc.withSum {
		return s.append(ctx, &Entry{Type: TypeBranchSummary, ParentID: targetID,
			Body: &BranchSummary{FromID: leaf, Summary: mc.summary, Details: mc.details, FromHook: mc.fromHook}}, true)
	}
	if leaf == targetID {
		return nil, nil
	}
	return s.append(ctx, &Entry{Type: TypeLeaf, ParentID: targetID}, true)
}

// Branch returns the entries from the root to id (the leaf when id is
// ""), root first.
func (s *Session) Branch(ctx context.Context, id string) ([]*Entry, error) {
	return branchOf(ctx, s.store, id)
}

func branchOf(ctx context.Context, store Store, id string) ([]*Entry, error) {
	if id == "" {
		var err error
		if id, err = store.Leaf(ctx); err != nil {
			return nil, err
		}
	}
	p, err := store.PathToRoot(ctx, id)
	if err != nil {
		return nil, err
	}
	reverse(p)
	return p, nil
}

// ContextOption configures one BuildContext call.
type ContextOption func(*contextCall)

type contextCall struct {
	opts   ContextOptions
	leaf   string
	leafOK bool
	refs   bool
}

// WithBlobRefs keeps references to content stored apart (see BlobRef) in
// the context's messages instead of fetching the content.
func WithBlobRefs() ContextOption { return func(c *contextCall) { c.refs = true } }

// WithTransforms adds call-level entry transforms (run after the session's).
func WithTransforms(ts ...EntryTransform) ContextOption {
	return func(c *contextCall) { c.opts.Transforms = append(c.opts.Transforms, ts...) }
}

// WithProjector sets the projector of one customType for this call.
func WithProjector(customType string, p Projector) ContextOption {
	return func(c *contextCall) {
		if c.opts.Projectors == nil {
			c.opts.Projectors = map[string]Projector{}
		}
		c.opts.Projectors[customType] = p
	}
}

// FromEntry builds the context of the branch ending at id instead of the
// leaf ("" is the empty branch).
func FromEntry(id string) ContextOption {
	return func(c *contextCall) { c.leaf, c.leafOK = id, true }
}

// BuildContext builds the model context of the current branch.
func (s *Session) BuildContext(ctx context.Context, opts ...ContextOption) (Context, error) {
	var cc contextCall
	for _, o := range opts {
		o(&cc)
	}
	leaf := cc.leaf
	if !cc.leafOK {
		var err error
		if leaf, err = s.store.Leaf(ctx); err != nil {
			return Context{}, err
		}
	}
	// A store holding references is read as stored: only what ends up
	// in the context is resolved, not the whole branch.
	store, bh := s.store, BlobHolder(nil)
	if h, ok := s.store.(BlobHolder); ok {
		store, bh = h.Refs(), h
	}
	copts := s.cfg.Context.merge(cc.opts)
	var branch []*Entry
	var err error
	if cb, ok := store.(ContextBrancher); ok && len(copts.Transforms) == 0 {
		branch, err = cb.ContextBranch(ctx, leaf)
	} else {
		branch, err = branchOf(ctx, store, leaf)
	}
	if err != nil {
		return Context{}, err
	}
	if leaf == "" {
		branch = nil
	}
	resolving := bh != nil && !cc.refs
	var failed error
	if resolving {
		// Projectors and transforms are the caller's code: they see
		// custom entries with their data in place.
		resolve := func(e *Entry) *Entry {
			if b := e.Custom(); b == nil || copts.Projectors[b.CustomType] == nil || failed != nil {
				return e
			}
			r, err := bh.ResolveEntry(ctx, e)
			if err != nil {
				failed = err
				return e
			}
			return r
		}
		copts.Transforms = append([]EntryTransform{resolve}, copts.Transforms...)
	}
	c := BuildContext(branch, copts)
	if failed != nil {
		return Context{}, failed
	}
	if !resolving {
		return c, nil
	}
	if err := bh.ResolveMessages(ctx, c.Messages); err != nil {
		return Context{}, err
	}
	if c.Compaction != nil {
		if c.Compaction, err = bh.ResolveEntry(ctx, c.Compaction); err != nil {
			return Context{}, err
		}
	}
	return c, nil
}

func (s *Session) withTree(ctx context.Context, fn func(t *Tree) error) error {
	return withTree(ctx, s.store, fn)
}

// withTree runs fn on the store's tree, or on one rebuilt from its entries
// when the store keeps none.
func withTree(ctx context.Context, store Store, fn func(t *Tree) error) error {
	if th, ok := store.(TreeHolder); ok {
		return th.ReadTree(ctx, fn)
	}
	h, err := store.Header(ctx)
	if err != nil {
		return err
	}
	entries, err := store.Entries(ctx)
	if err != nil {
		return err
	}
	t := NewTree(h)
	for _, e := range entries {
		if err := t.Apply(e); err != nil {
			return err
		}
	}
	return fn(t)
}

// Tree returns the session's tree view: children, labels, current leaf.
func (s *Session) Tree(ctx context.Context) (v TreeView, err error) {
	err = s.withTree(ctx, func(t *Tree) (err error) { v, err = t.view(); return err })
	return v, err
}

// Apart returns the branches other nodes wrote while apart that the
// current branch does not hold (Tree.Apart).
func (s *Session) Apart(ctx context.Context) (a []Apart, err error) {
	err = s.withTree(ctx, func(t *Tree) error { a = t.Apart(); return nil })
	return a, err
}

// Labels returns the labels in force.
func (s *Session) Labels(ctx context.Context) (l []LabelInfo, err error) {
	err = s.withTree(ctx, func(t *Tree) error { l = t.Labels(); return nil })
	return l, err
}

// SelectFork picks the branch a fork of this session copies.
func (s *Session) SelectFork(ctx context.Context, p ForkPoint) (ForkSelection, error) {
	return SelectForkOf(ctx, s.store, p)
}

// Stats returns statistics over the whole session.
func (s *Session) Stats(ctx context.Context) (Stats, error) { return s.store.Stats(ctx) }

// Name returns the session name.
func (s *Session) Name(ctx context.Context) (string, error) { return s.store.SessionName(ctx) }
