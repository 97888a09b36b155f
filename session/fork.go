package session

import (
	"errors"
	"fmt"
	"strings"
)

// ForkPoint says where a fork takes its branch from. The zero value is
// FromLeaf.
type ForkPoint struct {
	kind forkKind
	id   string
}

type forkKind int

const (
	forkLeaf forkKind = iota
	forkAt
	forkBefore
)

// FromLeaf forks the whole current branch.
func FromLeaf() ForkPoint { return ForkPoint{} }

// At forks the branch from the root down to and including entry id.
func At(id string) ForkPoint { return ForkPoint{kind: forkAt, id: id} }

// Before forks the branch up to, not including, the user message id, so
// that the message can be edited and sent again in the new session. Any
// other target is a *TargetError.
func Before(id string) ForkPoint { return ForkPoint{kind: forkBefore, id: id} }

func (p ForkPoint) String() string {
	switch p.kind {
	case forkAt:
		return "at " + p.id
	case forkBefore:
		return "before " + p.id
	}
	return "leaf"
}

// ForkSelection is what a fork copies.
type ForkSelection struct {
	// Entries are the copied branch, root first, ready to be appended to
	// a new session in order: leaf entries and labels of entries outside
	// the branch are dropped and their children re-parented.
	Entries []*Entry
	// Before is the user message the fork stopped before (ForkBefore only).
	Before *Entry
}

// SelectFork picks the branch a fork copies from tree t.
func SelectFork(t *Tree, p ForkPoint) (ForkSelection, error) {
	var sel ForkSelection
	var end string
	switch p.kind {
	case forkLeaf:
		end = t.Leaf()
	case forkAt:
		e, err := t.Get(p.id)
		if errors.Is(err, ErrEntryNotFound) {
			return sel, &TargetError{Op: "fork at", ID: p.id, Reason: reasonMissing}
		} else if err != nil {
			return sel, err
		}
		if e.Type == TypeLeaf {
			return sel, &TargetError{Op: "fork at", ID: p.id, Reason: "is a leaf marker, not a conversation entry"}
		}
		end = e.ID
	case forkBefore:
		e, err := t.Get(p.id)
		if errors.Is(err, ErrEntryNotFound) {
			return sel, &TargetError{Op: "fork before", ID: p.id, Reason: reasonMissing}
		} else if err != nil {
			return sel, err
		}
		if e.Type != TypeMessage || e.Message == nil || e.Message.Role != RoleUser {
			what := string(e.Type)
			if e.Message != nil {
				what = e.Message.Role + " message"
			}
			return sel, &TargetError{Op: "fork before", ID: p.id, Reason: fmt.Sprintf("is %s %s, not a user message", article(what), what)}
		}
		sel.Before = e
		end = e.ParentID
	}
	branch, err := t.Branch(end)
	if err != nil {
		return sel, err
	}
	if end == "" {
		branch = nil
	}
	sel.Entries = copyBranch(branch)
	return sel, nil
}

// copyBranch clones a branch, dropping entries that would not make sense
// in a session of their own, and re-parents what follows them.
func copyBranch(branch []*Entry) []*Entry {
	in := make(map[string]bool, len(branch))
	for _, e := range branch {
		in[e.ID] = true
	}
	out := make([]*Entry, 0, len(branch))
	parent := ""
	for _, e := range branch {
		if e.Type == TypeLeaf || (e.Type == TypeLabel && !in[e.TargetID()]) {
			continue
		}
		c := e.Clone()
		c.ParentID = parent
		out = append(out, c)
		parent = c.ID
	}
	return out
}

// article is "an" before a vowel sound ("an assistant message"), "a"
// otherwise.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
