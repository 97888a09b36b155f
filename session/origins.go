package session

import (
	"fmt"
	"strings"
)

// A session may be written on several nodes at once while they cannot
// reach each other (edge nodes, each with its own log, merged when their
// links are up). Each node's log then holds every entry once, but not in
// the same order, so "the leaf is the last entry applied" would leave
// each node a leaf of its own. The tree therefore remembers, for each
// origin (the node an entry was written on, named by the caller), the
// leaf that origin's last entry set, and the leaf of the session is:
//
//	the leaf of the origin whose last entry has the latest timestamp,
//	ties going to the greater origin name.
//
// Every node holding the same entries holds the same origins' leaves
// (each origin's entries keep their order everywhere), so every node
// reaches the same leaf. With one origin (a session written on one node,
// or entries applied without one) the rule is the usual one: the last
// entry applied. The other origins' leaves, where they are not on the
// current branch, are the branches written apart (Tree.Apart).

// OriginLeaf is where one origin's last entry left the leaf.
type OriginLeaf struct {
	Origin string
	Leaf   int32  // position of the leaf it set (-1: before the first entry)
	At     string // the timestamp of that origin's last entry
}

// MaxOrigins bounds the origins a tree tells apart: the nodes that write
// one session (a fleet's machines). Entries of further origins count as
// the last named one's kept.
const MaxOrigins = 64

// ApplyFrom is Apply of an entry written on origin (a node's name; "" for
// none): see the rule above.
func (t *Tree) ApplyFrom(origin string, e *Entry) error {
	if err := t.Check(e); err != nil {
		return err
	}
	t.applyFrom(origin, e)
	return nil
}

// ApplyCheckedFrom is ApplyChecked of entries written on origin.
func (t *Tree) ApplyCheckedFrom(origin string, entries []*Entry) error {
	for _, e := range entries {
		if e == nil {
			return fmt.Errorf("%w: nil entry", ErrInvalidEntry)
		}
		if err := t.check(e, nil, func(*Entry) error { return nil }, false, false); err != nil {
			return err
		}
		t.applyFrom(origin, e)
	}
	return nil
}

// applyFrom applies e and moves the leaf by the rule.
func (t *Tree) applyFrom(origin string, e *Entry) {
	if len(t.origins) == 0 && origin == "" {
		t.apply(e) // one unnamed origin: the last entry's leaf
		return
	}
	if len(t.origins) == 0 && len(t.entries) > 0 {
		// The entries so far came without an origin: they are one.
		t.origins = append(t.origins, OriginLeaf{Leaf: t.leaf, At: t.updated()})
	}
	t.apply(e) // sets t.leaf to the entry's own
	k := t.originIndex(origin)
	t.origins[k].Leaf, t.origins[k].At = t.leaf, e.Timestamp
	t.leaf = t.origins[t.latestOrigin()].Leaf
}

// originIndex finds (or adds) origin's record.
func (t *Tree) originIndex(origin string) int {
	for k := range t.origins {
		if t.origins[k].Origin == origin {
			return k
		}
	}
	if len(t.origins) == MaxOrigins {
		return len(t.origins) - 1
	}
	t.origins = append(t.origins, OriginLeaf{Origin: origin, Leaf: -1})
	return len(t.origins) - 1
}

// latestOrigin is the record whose leaf is the session's.
func (t *Tree) latestOrigin() int {
	best := 0
	for k := 1; k < len(t.origins); k++ {
		if laterOrigin(t.origins[k], t.origins[best]) {
			best = k
		}
	}
	return best
}

// laterOrigin reports whether a's last entry came after b's: by time,
// then (unparsable or equal times) by the timestamps' text, then by name.
// It runs for every entry applied to a tree of several origins: two UTC
// timestamps of one width (pi's, "2026-01-02T03:04:05.678Z") are
// ordered by their text without parsing, which orders them as their
// times would.
func laterOrigin(a, b OriginLeaf) bool {
	if a.At != b.At && len(a.At) == len(b.At) && strings.HasSuffix(a.At, "Z") && strings.HasSuffix(b.At, "Z") {
		return a.At > b.At
	}
	return laterOriginParsed(a, b)
}

// laterOriginParsed is laterOrigin by parsing the timestamps.
func laterOriginParsed(a, b OriginLeaf) bool {
	ta, tb := parseTime(a.At), parseTime(b.At)
	if !ta.IsZero() && !tb.IsZero() && !ta.Equal(tb) {
		return ta.After(tb)
	}
	if c := strings.Compare(a.At, b.At); c != 0 && (ta.IsZero() || tb.IsZero()) {
		return c > 0
	}
	return a.Origin > b.Origin
}

// updated is the timestamp of the last entry (of a partial tree's
// skeleton, when not loaded).
func (t *Tree) updated() string {
	n := len(t.entries)
	switch {
	case n == 0:
		return ""
	case t.entries[n-1] != nil:
		return t.entries[n-1].Timestamp
	case t.skel != nil:
		return t.skel.Updated
	}
	return ""
}

// Origins returns each origin's leaf, when entries came from more than one
// or with a name (nil otherwise). The slice is a copy.
func (t *Tree) Origins() []OriginLeaf {
	if len(t.origins) == 0 {
		return nil
	}
	return append([]OriginLeaf(nil), t.origins...)
}

// Apart is a branch written on another node while apart from the one
// whose leaf is the session's: its tip is not on the current branch.
type Apart struct {
	Origin string
	Leaf   string // its tip (the leaf that origin's last entry set)
	At     string // that entry's timestamp
}

// Apart returns the branches written apart that the current branch does
// not hold, latest first: the origins' leaves off the current branch that
// nothing was written below since (an origin's leaf that another's entries
// continue from is where the branches met, not a branch of its own).
func (t *Tree) Apart() []Apart {
	if len(t.origins) < 2 {
		return nil
	}
	off := map[int32]bool{}
	for _, o := range t.origins {
		if o.Leaf >= 0 {
			off[o.Leaf] = true
		}
	}
	for i := t.leaf; i >= 0; i = t.parent[i] {
		delete(off, i)
	}
	for _, p := range t.parent {
		delete(off, p) // something hangs below it
	}
	var out []Apart
	for _, o := range t.origins {
		if !off[o.Leaf] {
			continue
		}
		out = append(out, Apart{Origin: o.Origin, Leaf: t.idAt(o.Leaf), At: o.At})
	}
	for i := 1; i < len(out); i++ { // few: insertion sort, latest first
		for j := i; j > 0 && laterOrigin(OriginLeaf{Origin: out[j].Origin, At: out[j].At}, OriginLeaf{Origin: out[j-1].Origin, At: out[j-1].At}); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// checkOrigins reports what is wrong with a skeleton's origins.
func checkOrigins(os []OriginLeaf, n int) error {
	if len(os) > MaxOrigins {
		return fmt.Errorf("%w: skeleton of %d origins", ErrInvalidEntry, len(os))
	}
	seen := map[string]bool{}
	for _, o := range os {
		if o.Leaf < -1 || int(o.Leaf) >= n {
			return fmt.Errorf("%w: skeleton origin %q leaf %d of %d entries", ErrInvalidEntry, o.Origin, o.Leaf, n)
		}
		if seen[o.Origin] {
			return fmt.Errorf("%w: skeleton repeats origin %q", ErrInvalidEntry, o.Origin)
		}
		seen[o.Origin] = true
	}
	return nil
}

// Created on several nodes while apart, a session has a header from
// each (an Agents SDK session of an id the application chose, a
// LangGraph thread "1"): it is one session, every node's entries kept
// (each node's first entry a root of the tree), and its header is the
// earliest one by EarlierHeader, which every node picks alike.

// EarlierHeader reports whether a comes before b: by timestamp (of one
// width, as written: their text), then by the other members, so that
// two different headers are always ordered.
func EarlierHeader(a, b Header) bool {
	switch {
	case a.Timestamp != b.Timestamp:
		return a.Timestamp < b.Timestamp
	case a.Cwd != b.Cwd:
		return a.Cwd < b.Cwd
	case a.ParentSession != b.ParentSession:
		return a.ParentSession < b.ParentSession
	case a.Version != b.Version:
		return a.Version < b.Version
	}
	return string(a.Metadata) < string(b.Metadata)
}

// MeetHeader takes in another node's header of the session (created
// there too, while apart): the tree keeps the earlier of the two.
func (t *Tree) MeetHeader(h Header) {
	if h.ID == t.header.ID && EarlierHeader(h, t.header) {
		t.header = h
	}
}
