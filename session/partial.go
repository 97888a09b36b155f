package session

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Skeleton is what a tree needs to take appends and to answer leaf, name,
// labels and stats without its entries: ids, parent positions and types in
// append order, and the state those entries built. A long session opens
// from its skeleton; the entries follow when something reads them.
type Skeleton struct {
	IDs     IDList
	Parents []int32
	// Types are the entries' types as indexes into TypeDict (a byte an
	// entry rather than a string header: a 100k-entry skeleton is then
	// 100 KB of types, and nothing for the collector to scan).
	Types    []uint8
	TypeDict []EntryType
	Leaf     int32
	Name     string
	Labels   []SkelLabel
	NLabel   int
	Stats    Stats
	// Updated is the last entry's timestamp.
	Updated string
	// Sorted lists entry positions in the order of their ids, so a
	// partial tree finds ids without building a map.
	Sorted []int32
	// Origins are the leaves of the nodes that wrote the entries (see
	// origins.go; nil for entries without).
	Origins []OriginLeaf
}

// SkelLabel is one label in force, with its place in the label order.
type SkelLabel struct {
	Target string
	Label  string
	At     string
	Order  int
}

// ErrPartial is returned by the reads of a partial tree that need the
// entries it has not loaded yet (stores complete the tree first: seeing
// it means a store read too early).
var ErrPartial = errors.New("session: entries of a partial tree read before Complete")

// Skeleton returns the skeleton of the tree: of every entry, loaded or
// (on a partial tree) described by the skeleton it was opened from.
func (t *Tree) Skeleton() (Skeleton, error) {
	n := len(t.entries)
	s := Skeleton{
		Parents: append([]int32(nil), t.parent...), Types: make([]uint8, n),
		Leaf: t.leaf, Name: t.name, NLabel: t.nlabel, Stats: t.stats.clone(),
		Origins: t.Origins(),
	}
	ids := make([]string, n)
	codes := map[EntryType]uint8{}
	for i := range t.entries {
		typ := t.typeAt(int32(i))
		code, ok := codes[typ]
		if !ok {
			if len(s.TypeDict) == 256 {
				return Skeleton{}, fmt.Errorf("%w: more than 256 entry types in one session", ErrInvalidEntry)
			}
			code = uint8(len(s.TypeDict))
			codes[typ] = code
			s.TypeDict = append(s.TypeDict, typ)
		}
		ids[i], s.Types[i] = t.idAt(int32(i)), code
	}
	s.IDs = IDListOf(ids)
	switch {
	case n > 0 && t.entries[n-1] != nil:
		s.Updated = t.entries[n-1].Timestamp
	case n > 0:
		s.Updated = t.skel.Updated
	}
	for id, l := range t.labels {
		s.Labels = append(s.Labels, SkelLabel{Target: id, Label: l.label, At: l.at, Order: l.order})
	}
	s.Sorted = make([]int32, n)
	for i := range s.Sorted {
		s.Sorted[i] = int32(i)
	}
	slices.SortFunc(s.Sorted, func(a, b int32) int { return strings.Compare(ids[a], ids[b]) })
	return s, nil
}

// EntriesSoFar returns the entries in append order; on a partial tree
// those of its skeleton, the first skeleton of them, may be nil (not
// loaded): a snapshot's writer needs only those after its last segment.
// The slice must not be changed.
func (t *Tree) EntriesSoFar() (entries []*Entry, skeleton int) {
	if t.missing > 0 {
		skeleton = t.skel.IDs.Len()
	}
	return t.entries[:len(t.entries):len(t.entries)], skeleton
}

// sortedIDs finds the skeleton's entries by id with a binary search.
type sortedIDs struct {
	ids    IDList
	sorted []int32
}

func (b *sortedIDs) find(id string) (int32, bool) {
	k, ok := slices.BinarySearchFunc(b.sorted, id, func(i int32, id string) int { return strings.Compare(b.ids.At(int(i)), id) })
	if !ok {
		return -1, false
	}
	return b.sorted[k], true
}

// lookup finds an entry's position.
func (t *Tree) lookup(id string) (int32, bool) {
	if i, ok := t.index[id]; ok {
		return i, true
	}
	if t.base != nil {
		return t.base.find(id)
	}
	return -1, false
}

// NewPartialTree returns a tree holding the skeleton of its first
// s.IDs.Len() entries but not the entries: it takes appends (Check, Apply)
// and answers Header, Len, Leaf, Name, Label, Labels, Stats and Info; the
// reads of entries return ErrPartial until Complete gives it them.
func NewPartialTree(h Header, s Skeleton) (*Tree, error) {
	n := s.IDs.Len()
	if len(s.Parents) != n || len(s.Types) != n {
		return nil, fmt.Errorf("%w: skeleton of %d ids, %d parents, %d types", ErrInvalidEntry, n, len(s.Parents), len(s.Types))
	}
	for _, c := range s.Types {
		if int(c) >= len(s.TypeDict) {
			return nil, fmt.Errorf("%w: skeleton type %d of a dictionary of %d", ErrInvalidEntry, c, len(s.TypeDict))
		}
	}
	if s.Leaf < -1 || int(s.Leaf) >= n {
		return nil, fmt.Errorf("%w: skeleton leaf %d of %d entries", ErrInvalidEntry, s.Leaf, n)
	}
	if err := checkOrigins(s.Origins, n); err != nil {
		return nil, err
	}
	t := NewTree(h)
	t.entries = make([]*Entry, n)
	t.parent = append([]int32(nil), s.Parents...)
	t.skel = &s
	t.missing = n
	for i := range n {
		if p := s.Parents[i]; p < -1 || int(p) >= i {
			return nil, fmt.Errorf("%w: skeleton entry %d has parent %d", ErrInvalidEntry, i, p)
		}
	}
	// The sorted order must be a permutation of the positions, in strictly
	// increasing id order (which also rules out duplicate ids).
	if len(s.Sorted) != n {
		return nil, fmt.Errorf("%w: skeleton has %d sorted positions for %d ids", ErrInvalidEntry, len(s.Sorted), n)
	}
	seen := make([]bool, n)
	for k, i := range s.Sorted {
		if i < 0 || int(i) >= n || seen[i] {
			return nil, fmt.Errorf("%w: skeleton sort order is not a permutation", ErrInvalidEntry)
		}
		seen[i] = true
		if k > 0 {
			switch c := strings.Compare(s.IDs.At(int(s.Sorted[k-1])), s.IDs.At(int(i))); {
			case c == 0:
				return nil, fmt.Errorf("%w: skeleton repeats %q", ErrDuplicateID, s.IDs.At(int(i)))
			case c > 0:
				return nil, fmt.Errorf("%w: skeleton ids are not in sorted order", ErrInvalidEntry)
			}
		}
	}
	t.base = &sortedIDs{ids: s.IDs, sorted: s.Sorted}
	for i, c := range s.Types {
		if typ := s.TypeDict[c]; typ == TypeThinkingLevelChange || typ == TypeActiveToolsChange {
			t.settings = append(t.settings, int32(i))
		}
	}
	t.leaf = s.Leaf
	t.origins = append([]OriginLeaf(nil), s.Origins...)
	t.name = s.Name
	t.nlabel = s.NLabel
	for _, l := range s.Labels {
		t.labels[l.Target] = labelState{label: l.Label, at: l.At, order: l.Order}
	}
	for _, l := range t.Labels() { // in the order set
		t.listed.Change("", l.Label)
	}
	t.stats = s.Stats.clone()
	if t.stats.ByType == nil {
		t.stats.ByType = map[EntryType]int{}
	}
	if t.stats.ByRole == nil {
		t.stats.ByRole = map[string]int{}
	}
	return t, nil
}

// Partial reports whether the tree still lacks the entries of its skeleton.
func (t *Tree) Partial() bool { return t.missing > 0 }

// Missing returns how many entries (the skeleton's, first in append order)
// a partial tree lacks.
func (t *Tree) Missing() int { return t.missing }

// Complete gives a partial tree the entries of its skeleton, in order. They
// must have the skeleton's ids, parents and types; on error the tree stays
// partial.
func (t *Tree) Complete(base []*Entry) error {
	if t.missing == 0 {
		return nil
	}
	s := t.skel
	if len(base) != s.IDs.Len() {
		return fmt.Errorf("%w: %d entries for a skeleton of %d", ErrInvalidEntry, len(base), s.IDs.Len())
	}
	for i, e := range base {
		parent := ""
		if p := s.Parents[i]; p >= 0 {
			parent = s.IDs.At(int(p))
		}
		if e == nil || e.ID != s.IDs.At(i) || e.ParentID != parent || e.Type != s.TypeDict[s.Types[i]] {
			return fmt.Errorf("%w: entry %d does not match the skeleton", ErrInvalidEntry, i)
		}
	}
	copy(t.entries, base)
	for _, e := range base {
		t.bytes += int64(e.Size())
	}
	t.missing = 0
	t.skel = nil
	return nil
}

// Has reports whether an entry id is in the tree; it works on a partial
// tree too.
func (t *Tree) Has(id string) bool {
	_, ok := t.lookup(id)
	return ok
}

// Loaded returns the entry with the given id if the tree holds its
// content: ok is false when the id is unknown, and e is nil when the
// entry is one a partial tree has not loaded.
func (t *Tree) Loaded(id string) (e *Entry, ok bool) {
	i, ok := t.lookup(id)
	if !ok {
		return nil, false
	}
	return t.entries[i], true
}

func (t *Tree) requireFull() error {
	if t.missing > 0 {
		return ErrPartial
	}
	return nil
}

// idAt and typeAt read an entry's id and type, from the skeleton while the
// entry is not loaded.
func (t *Tree) idAt(i int32) string {
	if e := t.entries[i]; e != nil {
		return e.ID
	}
	return t.skel.IDs.At(int(i))
}

func (t *Tree) typeAt(i int32) EntryType {
	if e := t.entries[i]; e != nil {
		return e.Type
	}
	return t.skel.TypeDict[t.skel.Types[i]]
}
