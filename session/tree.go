package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// MaxIDLen bounds entry ids, which travel in message ids and file lines.
const MaxIDLen = 256

// Tree is the materialised state of one session: its entries in append
// order, an index by id, labels, name, leaf and running statistics. It is
// a plain value owned by one goroutine; stores guard it with their own lock.
//
// Entries passed to Apply are kept, not copied: the caller must not change
// them afterwards. Entries returned by Tree are shared and read-only.
type Tree struct {
	header  Header
	entries []*Entry
	parent  []int32 // index of each entry's parent, -1 for roots
	index   map[string]int32
	labels  map[string]labelState
	nlabel  int // insertion counter for label order
	name    string
	leaf    int32 // -1: before the first entry
	stats   Stats

	// A partial tree (NewPartialTree) has nil entries for the first
	// `missing` positions, described by skel until Complete. Its first
	// entries are found by binary search over their sorted ids (base)
	// instead of through index, which then holds the later ones only.
	skel    *Skeleton
	missing int
	base    *sortedIDs

	// settings are the positions of thinking-level and active-tools
	// entries, in order: a context looks for the last ones on its branch
	// without walking a long branch entry by entry.
	settings []int32

	// listed are the labels a listing shows, kept as labels change: Info
	// runs on every write, and under read locks.
	listed ListedLabels

	// bytes is the estimated memory of the entries held (Bytes).
	bytes int64

	// origins are the leaves of the nodes the entries were written on,
	// once a named one has written (origins.go).
	origins []OriginLeaf

	// lean trees keep lean entries (lean.go).
	lean bool
}

type labelState struct {
	label string
	at    string // timestamp of the label entry
	order int
}

// NewTree returns an empty tree for the session described by h.
func NewTree(h Header) *Tree {
	return &Tree{
		header: h,
		index:  make(map[string]int32),
		labels: make(map[string]labelState),
		leaf:   -1,
		stats:  newStats(),
	}
}

// Header returns the session header.
func (t *Tree) Header() Header { return t.header }

// Len returns the number of entries.
func (t *Tree) Len() int { return len(t.entries) }

// Entries returns all entries in append order. The slice is shared: do not
// modify it or its entries.
func (t *Tree) Entries() ([]*Entry, error) {
	if err := t.requireFull(); err != nil {
		return nil, err
	}
	return t.entries[:len(t.entries):len(t.entries)], nil
}

// Get returns the entry with the given id, ErrEntryNotFound, or (on a
// partial tree) ErrPartial.
func (t *Tree) Get(id string) (*Entry, error) {
	if err := t.requireFull(); err != nil {
		return nil, err
	}
	i, ok := t.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrEntryNotFound, id)
	}
	return t.entries[i], nil
}

// Leaf returns the id of the current leaf, or "" when the session is empty
// or the leaf was moved before the first entry.
func (t *Tree) Leaf() string {
	if t.leaf < 0 {
		return ""
	}
	return t.idAt(t.leaf)
}

// Name returns the session's display name ("" if unnamed).
func (t *Tree) Name() string { return t.name }

// Label returns the label on entry id, if any.
func (t *Tree) Label(id string) (string, bool) {
	l, ok := t.labels[id]
	if ok && !t.Has(id) {
		return "", false // a label of a missing entry (see check)
	}
	return l.label, ok
}

// LabelInfo is one label in force.
type LabelInfo struct {
	ID        string // the labelled entry
	Label     string
	Timestamp string // when the label was set
}

// Labels returns the labels in force, in the order they were first set
// (re-setting a label keeps its place; clearing and setting moves it last).
func (t *Tree) Labels() []LabelInfo {
	out := make([]LabelInfo, 0, len(t.labels))
	for id, l := range t.labels {
		if t.Has(id) {
			out = append(out, LabelInfo{ID: id, Label: l.label, Timestamp: l.at})
		}
	}
	orderOf := func(li LabelInfo) int { return t.labels[li.ID].order }
	slices.SortFunc(out, func(a, b LabelInfo) int { return orderOf(a) - orderOf(b) })
	return out
}

// FindByType returns the entries of type typ in append order.
func (t *Tree) FindByType(typ EntryType) ([]*Entry, error) {
	if err := t.requireFull(); err != nil {
		return nil, err
	}
	var out []*Entry
	for _, e := range t.entries {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out, nil
}

// PathToRoot returns the entries from id up to its root, id first. An
// empty id gives an empty path.
func (t *Tree) PathToRoot(id string) ([]*Entry, error) {
	if id == "" {
		return nil, nil
	}
	if err := t.requireFull(); err != nil {
		return nil, err
	}
	i, ok := t.lookup(id)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrEntryNotFound, id)
	}
	var out []*Entry
	for ; i >= 0; i = t.parent[i] {
		out = append(out, t.entries[i])
	}
	return out, nil
}

// Branch returns the entries from the root down to id (the current leaf
// when id is ""), root first.
func (t *Tree) Branch(id string) ([]*Entry, error) {
	if id == "" {
		id = t.Leaf()
	}
	p, err := t.PathToRoot(id)
	if err != nil {
		return nil, err
	}
	reverse(p)
	return p, nil
}

// Stats returns the running statistics of the whole session.
func (t *Tree) Stats() Stats { return t.stats.clone() }

// Check reports whether e could be applied, without applying it.
func (t *Tree) Check(e *Entry) error { return t.check(e, nil, ValidateLoad, false, false) }

// check validates e against the tree plus the ids in added (entries of the
// same batch that come before e). A label of a missing entry is refused
// only when strictTargets: loading keeps it, as pi's loader does (it is
// inert until an entry of that id exists, see Labels), and writes refuse
// it unless they import (ForImport). boundTypes holds the session to
// MaxUnknownTypes: every write but a restore (ForRestore).
func (t *Tree) check(e *Entry, added map[string]*Entry, validate func(*Entry) error, strictTargets, boundTypes bool) error {
	if err := validate(e); err != nil {
		return err
	}
	if _, err := t.place(e, added); err != nil {
		return err
	}
	has := func(id string) bool {
		_, ok := t.lookup(id)
		return ok || added[id] != nil
	}
	if l := e.Label(); strictTargets && l != nil && !has(l.TargetID) {
		return &TargetError{Op: "label", ID: l.TargetID, Reason: reasonMissing}
	}
	if strictTargets && e.Type == TypeContextEdit {
		if err := t.checkEditTarget(e, added); err != nil {
			return err
		}
	}
	if boundTypes && !e.Type.Known() && t.stats.ByType[e.Type] == 0 && t.unknownTypes(added) >= MaxUnknownTypes {
		return fmt.Errorf("%w: entry %q would be of a %dth type unknown to sessionlog in this session (at most %d)",
			ErrInvalidEntry, e.ID, MaxUnknownTypes+1, MaxUnknownTypes)
	}
	return nil
}

// place finds where e goes: its id must be free in the tree and in added,
// its parent in one of them. p is the parent's place in the tree (-1: a
// root, or a parent in added).
func (t *Tree) place(e *Entry, added map[string]*Entry) (p int32, err error) {
	if _, taken := t.lookup(e.ID); taken || added[e.ID] != nil {
		return -1, fmt.Errorf("%w: %q", ErrDuplicateID, e.ID)
	}
	if e.ParentID == "" {
		return -1, nil
	}
	if p, ok := t.lookup(e.ParentID); ok {
		return p, nil
	}
	if added[e.ParentID] != nil {
		return -1, nil
	}
	return -1, fmt.Errorf("%w: entry %q names parent %q", ErrParentNotFound, e.ID, e.ParentID)
}

// ValidateID checks an entry id: non-empty, at most MaxIDLen bytes, no
// whitespace or control characters.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty id", ErrInvalidEntry)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: id of %d bytes (max %d)", ErrInvalidEntry, len(id), MaxIDLen)
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("%w: id %q has spaces or control characters", ErrInvalidEntry, id)
	}
	return nil
}

// Validated is an entry ValidateLoad has passed: what can be checked of
// an entry on its own is checked apart from applying it (where it can run
// in parallel, as decoding a file does), and ApplyValidated checks only
// what depends on the tree.
type Validated struct {
	e *Entry
	// counts is what the entry adds to the tree's statistics that costs
	// a walk of its text: counted here, where loaders spread the work
	// over their lines, rather than where the tree is built one entry
	// after another.
	counts entryCounts
}

// entryCounts are the statistics of an entry that take a walk of it.
type entryCounts struct {
	redactions int
	size       int
}

func countEntry(e *Entry) entryCounts {
	return entryCounts{redactions: CountRedactions(e), size: e.Size()}
}

// Validate runs ValidateLoad on e.
func Validate(e *Entry) (Validated, error) {
	if err := ValidateLoad(e); err != nil {
		return Validated{}, err
	}
	return Validated{e: e, counts: countEntry(e)}, nil
}

// Entry returns the validated entry.
func (v Validated) Entry() *Entry { return v.e }

// ApplyValidated is Apply of an entry Validate has passed (and not
// changed since): only where it goes is checked.
func (t *Tree) ApplyValidated(v Validated) error {
	e := v.e
	if e == nil {
		return fmt.Errorf("%w: nil entry", ErrInvalidEntry)
	}
	p, err := t.place(e, nil)
	if err != nil {
		return err
	}
	t.applyAt(e, p, v.counts)
	return nil
}

// ApplyChecked adds entries CheckBatch has passed against this tree, in
// order. Their fields are not validated again (that is most of Apply's
// cost); where each goes is: an entry whose id is taken or whose parent
// is missing is refused, and nothing after it is applied.
func (t *Tree) ApplyChecked(entries []*Entry) error { return t.ApplyCheckedFrom("", entries) }

// Grow makes room for n more entries, for a caller about to apply many.
func (t *Tree) Grow(n int) {
	if n <= 0 {
		return
	}
	t.entries = slices.Grow(t.entries, n)
	t.parent = slices.Grow(t.parent, n)
	if len(t.index) == 0 {
		t.index = make(map[string]int32, n)
	}
}

// Apply checks e and adds it to the tree, moving the leaf: to e itself, or
// for a leaf entry to the entry it names (its parent).
func (t *Tree) Apply(e *Entry) error { return t.ApplyFrom("", e) }

func (t *Tree) apply(e *Entry) {
	p := int32(-1)
	if e.ParentID != "" {
		p, _ = t.lookup(e.ParentID)
	}
	t.applyAt(e, p, countEntry(e))
}

// applyAt adds e, whose parent is at p (-1: a root), with its counts.
func (t *Tree) applyAt(e *Entry, p int32, c entryCounts) {
	i := int32(len(t.entries))
	if p >= 0 && t.entries[p] != nil {
		e.ParentID = t.entries[p].ID // the same id: its bytes once, not per child
	}
	t.entries = append(t.entries, e)
	t.parent = append(t.parent, p)
	t.index[e.ID] = i
	t.bytes += int64(c.size)
	if e.Type == TypeThinkingLevelChange || e.Type == TypeActiveToolsChange {
		t.settings = append(t.settings, i)
	}
	switch e.Type {
	case TypeLeaf:
		t.leaf = p
	default:
		t.leaf = i
	}
	switch e.Type {
	case TypeLabel:
		if b := e.Label(); b != nil {
			t.label(b, e.Timestamp)
		}
	case TypeSessionInfo:
		if b := e.NameChange(); b != nil {
			t.name = strings.TrimSpace(b.Name)
		}
	}
	t.stats.add(e, c.redactions)
	if t.lean {
		// Counted whole, kept lean.
		t.entries[i] = leanOf(e)
		t.bytes += leanEntryBytes - int64(c.size)
	}
}

// SetLeaf moves the leaf without an entry. Loaders use it to restore the
// leaf a file names when its lines are not in parent-first order; sessions
// move the leaf by appending a leaf entry.
func (t *Tree) SetLeaf(id string) error {
	if id == "" {
		t.leaf = -1
		return nil
	}
	i, ok := t.lookup(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrEntryNotFound, id)
	}
	if t.typeAt(i) == TypeLeaf {
		i = t.parent[i]
	}
	t.leaf = i
	return nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// CheckBatch reports whether entries could be written in order, without
// applying any. It is the check of every write: each entry must pass
// ValidateWrite, not only ValidateLoad as loaded ones do, and a label
// must name an entry that exists, unless ctx is ForImport.
func (t *Tree) CheckBatch(ctx context.Context, entries []*Entry) error {
	return t.CheckBatches(ctx).add(entries, false)
}

// BatchCheck checks batches meant to be written together, one after
// another (a group commit of several writers' appends): each is checked
// as CheckBatch would check it once the batches before it that passed
// were written. A batch that fails counts for nothing after it.
type BatchCheck struct {
	t             *Tree
	added         map[string]*Entry // the entries of the batches passed
	strict, bound bool
}

// CheckBatches starts a BatchCheck of the tree as it is; the tree must not
// change while it is used.
func (t *Tree) CheckBatches(ctx context.Context) *BatchCheck {
	return &BatchCheck{t: t, strict: !importing(ctx), bound: !restoring(ctx)}
}

// Add checks entries after the batches passed before them, and counts
// them for the batches after if they pass.
func (c *BatchCheck) Add(entries []*Entry) error { return c.add(entries, true) }

// add is Add; without more, entries are checked but not counted (no batch
// follows them), so a lone entry's check allocates nothing.
func (c *BatchCheck) add(entries []*Entry, more bool) error {
	if c.added == nil && (more || len(entries) > 1) {
		c.added = make(map[string]*Entry, len(entries))
	}
	for i, e := range entries {
		if err := c.t.check(e, c.added, ValidateWrite, c.strict, c.bound); err != nil {
			for _, d := range entries[:i] {
				delete(c.added, d.ID)
			}
			return err
		}
		if c.added != nil {
			c.added[e.ID] = e
		}
	}
	return nil
}

// Lenient reports whether ctx relaxes the checks of writes (ForImport,
// ForRestore): writes under it must not be checked with others'.
func Lenient(ctx context.Context) bool { return importing(ctx) || restoring(ctx) }

// DanglingLabels returns the ids of label entries whose target is in no
// entry of the tree: what a strict reader refuses and pi's loader keeps.
func (t *Tree) DanglingLabels() []string {
	var out []string
	for i := range t.entries {
		e := t.entries[i]
		if e != nil && e.Type == TypeLabel && !t.Has(e.TargetID()) {
			out = append(out, e.ID)
		}
	}
	return out
}

type importKey struct{}

// ForImport returns a ctx under which writes accept what a loader accepts
// but a writer refuses: a label of a missing entry, as in pi files read
// leniently and sessions restored from them. It exists only in-process:
// nothing a remote client sends sets it.
func ForImport(ctx context.Context) context.Context {
	return context.WithValue(ctx, importKey{}, true)
}

func importing(ctx context.Context) bool {
	v, _ := ctx.Value(importKey{}).(bool)
	return v
}

type restoreKey struct{}

// ForRestore is ForImport for sessions this store held before (an
// archive brought back): they are written as they were, even past
// MaxUnknownTypes, which every other write — an import of files, a
// follow — is held to.
func ForRestore(ctx context.Context) context.Context {
	return ForImport(context.WithValue(ctx, restoreKey{}, true))
}

func restoring(ctx context.Context) bool {
	v, _ := ctx.Value(restoreKey{}).(bool)
	return v
}
