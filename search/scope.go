package search

import (
	"fmt"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
)

// Scope is what of one session a search reads: its entries, and of a
// branch those its context no longer shows (a compaction summarized
// them), whose hits are marked OutsideContext.
type Scope struct {
	Entries []string
	Outside map[string]bool
}

// ScopeOf is the scope of a search within a session of tree t: the
// subtree under at for api.ScopeSubtree, else the branch ending at at
// (the leaf when empty). An at the tree does not hold is
// session.ErrEntryNotFound.
func ScopeOf(t *session.Tree, scope, at string) (Scope, error) {
	if at != "" && !t.Has(at) {
		return Scope{}, fmt.Errorf("%w: %q", session.ErrEntryNotFound, at)
	}
	if scope == api.ScopeSubtree {
		return SubtreeScope(t, at)
	}
	return BranchScope(t, at)
}

// BranchScope is the path from the root to at (the leaf when empty):
// what the session's model built on when it was at at.
func BranchScope(t *session.Tree, at string) (Scope, error) {
	if at == "" {
		at = t.Leaf()
	}
	if at == "" {
		return Scope{Entries: []string{}}, nil // nothing written yet
	}
	branch, err := t.Branch(at)
	if err != nil {
		return Scope{}, err
	}
	seen := map[string]bool{}
	for _, id := range session.BuildContext(branch, session.ContextOptions{}).Sources {
		seen[id] = true
	}
	sc := Scope{Entries: make([]string, len(branch)), Outside: map[string]bool{}}
	for i, e := range branch {
		sc.Entries[i] = e.ID
		if !seen[e.ID] {
			sc.Outside[e.ID] = true
		}
	}
	return sc, nil
}

// SubtreeScope is at and every entry under it. A parent comes before its
// children in a tree's entries, so one pass finds them.
func SubtreeScope(t *session.Tree, at string) (Scope, error) {
	if !t.Has(at) {
		return Scope{}, fmt.Errorf("%w: %q", session.ErrEntryNotFound, at)
	}
	entries, err := t.Entries()
	if err != nil {
		return Scope{}, err
	}
	in := map[string]bool{at: true}
	sc := Scope{Entries: []string{at}}
	for _, e := range entries {
		if e.ID != at && in[e.ParentID] {
			in[e.ID] = true
			sc.Entries = append(sc.Entries, e.ID)
		}
	}
	return sc, nil
}
