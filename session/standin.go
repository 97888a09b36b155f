package session

import (
	"errors"
	"fmt"
)

// A stand-in answers the context of a session's leaf from the leaf's
// context branch alone (ContextBranch: the entries BuildContext needs,
// root first), and of the entries appended below that leaf since. A
// backend keeps such a branch beside a long session's snapshot, so that
// opening the session for its context need not read every id of it.
//
// The branch skips what the context does not need, so above its exact
// part (from its leaf up, while each entry is the child of the one
// before) it is not the session's path. An entry appended after it that
// hangs elsewhere, or a compaction keeping an entry off that path, is
// refused: the stand-in could not give its context.

// ErrBeyondStandIn is an entry a stand-in cannot take: it hangs from, or
// its compaction keeps, an entry of the session the stand-in does not hold
// the path to. Read the whole session instead.
var ErrBeyondStandIn = errors.New("session: the entry reaches past what the stand-in holds")

// StandIn is a tree made from a leaf's context branch, then the entries
// appended below that leaf.
type StandIn struct {
	tree *Tree
	// originals are the branch's entries as given: the tree holds copies
	// whose parent is the branch's entry before them.
	originals map[string]*Entry
	// exact are the branch's entries along which it is the session's path;
	// below are the leaf and the entries taken since.
	exact, below map[string]bool
	// origin is the one node the session's entries were written on, as
	// far as the branch goes (WithOrigin).
	origin string
}

// StandInBranch is what a stand-in of leaf's branch is made from: the
// context branch of leaf, and leaf itself last when the context does not
// take it (a leaf move, a label). ok is false when it would hold more
// than max entries: the walk stops there (a long session without a
// compaction would be walked whole, for nothing).
func (t *Tree) StandInBranch(leaf string, max int) (branch []*Entry, ok bool, err error) {
	branch, err = t.contextBranch(leaf, max)
	switch {
	case errors.Is(err, errPlanTooLong):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case leaf != "" && (len(branch) == 0 || branch[len(branch)-1].ID != leaf):
		e, err := t.Get(leaf)
		if err != nil {
			return nil, false, err
		}
		branch = append(branch, e)
	}
	if len(branch) > max {
		return nil, false, nil
	}
	return branch, true, nil
}

// NewStandIn makes the stand-in of the session h from branch, the
// StandInBranch of its leaf (the last entry).
func NewStandIn(h Header, branch []*Entry) (*StandIn, error) {
	s := &StandIn{tree: NewTree(h), originals: make(map[string]*Entry, len(branch)), exact: map[string]bool{}, below: map[string]bool{}}
	prev := ""
	for i, e := range branch {
		if e == nil {
			return nil, fmt.Errorf("%w: entry %d of the branch is nil", ErrInvalidEntry, i)
		}
		c := *e
		c.ParentID = prev
		if err := s.tree.Apply(&c); err != nil {
			return nil, fmt.Errorf("entry %d of the branch: %w", i, err)
		}
		s.originals[e.ID], prev = e, e.ID
	}
	for i := len(branch) - 1; i >= 0; i-- {
		s.exact[branch[i].ID] = true
		if i == 0 || branch[i].ParentID != branch[i-1].ID {
			break
		}
	}
	if prev != "" {
		s.below[prev] = true
		// The branch's last entry is the leaf, even when it is a leaf
		// move itself (which, applied, moves the leaf to its parent).
		p, _ := s.tree.lookup(prev)
		s.tree.leaf = p
	}
	return s, nil
}

// Apply takes an entry appended to the session after the branch's leaf:
// ErrBeyondStandIn when it hangs from an entry other than the leaf and
// those taken since (a leaf move included: its parent is where it moves),
// or is a compaction keeping an entry off the path the stand-in holds.
func (s *StandIn) Apply(e *Entry) error { return s.ApplyFrom("", e) }

// WithOrigin says the session's entries so far were all written on
// origin (a node's name: see Tree.ApplyFrom), and returns s.
func (s *StandIn) WithOrigin(origin string) *StandIn {
	if origin != "" && len(s.tree.origins) == 0 {
		s.tree.origins = []OriginLeaf{{Origin: origin, Leaf: s.tree.leaf, At: s.tree.updated()}}
	}
	s.origin = origin
	return s
}

// ApplyFrom is Apply of an entry written on origin: an entry of another
// origin than the session's so far is refused (ErrBeyondStandIn), as its
// leaf would be decided by the others' leaves, which the stand-in lacks.
func (s *StandIn) ApplyFrom(origin string, e *Entry) error {
	if origin != s.origin {
		return fmt.Errorf("%w: %s was written on %q, the session on %q", ErrBeyondStandIn, e.ID, origin, s.origin)
	}
	if e == nil {
		return fmt.Errorf("%w: nil entry", ErrInvalidEntry)
	}
	if e.ParentID != "" && !s.below[e.ParentID] {
		return fmt.Errorf("%w: %s hangs from %s", ErrBeyondStandIn, e.ID, e.ParentID)
	}
	if c := e.Compaction(); c != nil && c.RetainedTail == nil && c.FirstKeptEntryID != "" && !s.below[c.FirstKeptEntryID] && !s.exact[c.FirstKeptEntryID] {
		return fmt.Errorf("%w: compaction %s keeps from %s", ErrBeyondStandIn, e.ID, c.FirstKeptEntryID)
	}
	if err := s.tree.ApplyFrom(origin, e); err != nil {
		return err
	}
	s.below[e.ID] = true
	return nil
}

// Tree is the stand-in's tree: its leaf and header are the session's,
// and the context of any entry Answers is too. Its branch's entries are
// copies (see Originals); nothing else of it is the session's.
func (s *StandIn) Tree() *Tree { return s.tree }

// Answers reports whether the stand-in gives the context of the branch
// ending at leaf: the branch's leaf, or an entry taken since.
func (s *StandIn) Answers(leaf string) bool { return s.below[leaf] }

// ContextBranch is the session's ContextBranch of leaf, which Answers: the
// branch's own entries as given, not the tree's copies.
func (s *StandIn) ContextBranch(leaf string) ([]*Entry, error) {
	if !s.Answers(leaf) {
		return nil, fmt.Errorf("%w: the context of %s", ErrBeyondStandIn, leaf)
	}
	out, err := s.tree.ContextBranch(leaf)
	if err != nil {
		return nil, err
	}
	for i, e := range out {
		if o, ok := s.originals[e.ID]; ok {
			out[i] = o
		}
	}
	return out, nil
}
