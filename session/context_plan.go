package session

import (
	"errors"
	"fmt"
	"slices"
)

// Reading only what a context needs. A partial tree (opened from its
// skeleton) knows every entry's parent and type. The context of a branch
// needs, of its entries, only those from the latest compaction's first
// kept entry (the compaction itself when it keeps a retained tail) to the
// leaf, and before them the last thinking-level, active-tools and
// model-setting entries: BuildContext of that reduced branch is
// BuildContext of the whole branch (transforms aside, which see the
// branch they are given). ContextNeeds says which of those entries a
// partial tree still lacks — in rounds, since which ones depends on the
// compaction's content and on the roles of messages — Fill gives them,
// and ContextBranch returns the reduced branch.

// maxModelProbe bounds the messages one round asks for while looking
// back for the last model an assistant message set.
const maxModelProbe = 64

// ContextNeeds returns the positions (in append order) of the entries the
// context of the branch ending at leafID needs that the tree has not
// loaded. Load them (Fill) and ask again until none is left.
func (t *Tree) ContextNeeds(leafID string) ([]int32, error) {
	_, missing, err := t.contextPlan(leafID, 0)
	return missing, err
}

// ContextBranch returns the reduced branch ending at leafID, root first:
// ErrPartial while ContextNeeds lists entries to load.
func (t *Tree) ContextBranch(leafID string) ([]*Entry, error) {
	return t.contextBranch(leafID, 0)
}

// errPlanTooLong is a context plan whose region passed its limit.
var errPlanTooLong = errors.New("session: the context's region is longer than asked")

// contextBranch is ContextBranch with contextPlan's limit.
func (t *Tree) contextBranch(leafID string, limit int) ([]*Entry, error) {
	keep, missing, err := t.contextPlan(leafID, limit)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, ErrPartial
	}
	out := make([]*Entry, len(keep))
	for i, p := range keep {
		out[i] = t.entries[p]
	}
	return out, nil
}

// contextPlan computes the reduced branch (keep, positions in path order)
// and what of it, or of what decides it, is not loaded. With limit set, a
// region of more entries is errPlanTooLong, found without walking on.
func (t *Tree) contextPlan(leafID string, limit int) (keep, missing []int32, err error) {
	if leafID == "" {
		return nil, nil, nil
	}
	leaf, ok := t.lookup(leafID)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s", ErrEntryNotFound, leafID)
	}
	// Walk up from the leaf to the latest compaction (the first met) and
	// on to its first kept entry: the region the context takes whole.
	// Above it only a few entries matter, found walking on up: a long
	// session's context does not walk its whole branch.
	var up []int32 // the region, leaf first
	for p := leaf; p >= 0; p = t.parent[p] {
		if up = append(up, p); limit > 0 && len(up) > limit {
			return nil, nil, errPlanTooLong
		}
		if t.typeAt(p) != TypeCompaction {
			continue
		}
		e := t.entries[p]
		if e == nil {
			return nil, []int32{p}, nil
		}
		comp := e.Compaction()
		if comp == nil {
			continue // as BuildContext: no compaction without its members
		}
		// The first kept entry, if it is on the path: looked up once,
		// then found by position from the compaction up (it is near).
		if kept, ok := t.lookup(comp.FirstKeptEntryID); ok && comp.RetainedTail == nil && kept < p {
			n := len(up)
			for q := t.parent[p]; q >= kept; q = t.parent[q] {
				up = append(up, q)
				if q == kept {
					n = len(up)
					break
				}
			}
			up = up[:n] // positions only fall going up: below it, it is not on the path
			if limit > 0 && len(up) > limit {
				return nil, nil, errPlanTooLong
			}
		}
		break
	}
	region := slices.Clone(up)
	slices.Reverse(region)
	top := region[0]
	for _, p := range region {
		if t.entries[p] == nil {
			missing = append(missing, p)
		}
	}
	// The last thinking-level and active-tools entries above the region:
	// the tree's settings positions, latest first, that are ancestors of
	// its top (positions fall going up: one walk serves them all).
	var pre []int32
	thinking, tools := false, false
	q := t.parent[top]
	for k := len(t.settings) - 1; k >= 0 && q >= 0 && !(thinking && tools); k-- {
		p := t.settings[k]
		if p >= top {
			continue
		}
		for q > p {
			q = t.parent[q]
		}
		if q != p {
			continue
		}
		switch t.typeAt(p) {
		case TypeThinkingLevelChange:
			if !thinking {
				pre, thinking = append(pre, p), true
			}
		case TypeActiveToolsChange:
			if !tools {
				pre, tools = append(pre, p), true
			}
		}
	}
	if len(missing) == 0 && !setsModel(t.entries, region) {
		// The model comes from above the region: the last model change
		// or assistant message there (roles need the entries).
		probed := 0
	probe:
		for p := t.parent[top]; p >= 0 && probed < maxModelProbe; p = t.parent[p] {
			switch t.typeAt(p) {
			case TypeModelChange:
				pre = append(pre, p)
				break probe
			case TypeMessage:
				if e := t.entries[p]; e == nil {
					missing = append(missing, p)
					probed++
				} else if e.Message != nil && e.Message.Assistant() != nil {
					pre = append(pre, p)
					break probe
				}
			}
		}
	}
	for _, p := range pre {
		if t.entries[p] == nil && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	slices.Sort(pre)
	pre = slices.Compact(pre)
	keep = append(pre, region...)
	slices.Sort(missing)
	return keep, missing, nil
}

// setsModel reports whether one of the entries at positions sets the
// context's model.
func setsModel(entries []*Entry, positions []int32) bool {
	for _, p := range positions {
		e := entries[p]
		if e.Type == TypeModelChange || (e.Type == TypeMessage && e.Message != nil && e.Message.Assistant() != nil) {
			return true
		}
	}
	return false
}

// Fill gives a partial tree the entries at some positions of its
// skeleton (as ContextNeeds listed them). They must have the skeleton's
// ids, parents and types; on error nothing is filled. Positions already
// loaded are left as they are.
func (t *Tree) Fill(positions []int32, entries []*Entry) error {
	if len(positions) != len(entries) {
		return fmt.Errorf("%w: %d entries for %d positions", ErrInvalidEntry, len(entries), len(positions))
	}
	s := t.skel
	for k, i := range positions {
		if s == nil || i < 0 || int(i) >= s.IDs.Len() {
			return fmt.Errorf("%w: position %d is not one of the skeleton's", ErrInvalidEntry, i)
		}
		parent := ""
		if p := s.Parents[i]; p >= 0 {
			parent = s.IDs.At(int(p))
		}
		if e := entries[k]; e == nil || e.ID != s.IDs.At(int(i)) || e.ParentID != parent || e.Type != s.TypeDict[s.Types[i]] {
			return fmt.Errorf("%w: entry for position %d does not match the skeleton", ErrInvalidEntry, i)
		}
	}
	for k, i := range positions {
		if t.entries[i] == nil {
			t.entries[i] = entries[k]
			t.missing--
		}
	}
	if t.missing == 0 {
		t.skel = nil
	}
	return nil
}
