package session

// MaxUnknownTypes bounds the entry types of one session that sessionlog
// does not know: what per-type counts and snapshots hold stays small.
const MaxUnknownTypes = 32

// unknownTypes counts the unknown types of the tree and of added.
func (t *Tree) unknownTypes(added map[string]*Entry) int {
	n := 0
	for typ := range t.stats.ByType {
		if !typ.Known() {
			n++
		}
	}
	seen := map[EntryType]bool{}
	for _, e := range added {
		if !e.Type.Known() && t.stats.ByType[e.Type] == 0 && !seen[e.Type] {
			seen[e.Type] = true
			n++
		}
	}
	return n
}

// checkEditTarget refuses a context_edit whose target pi would refuse: one
// that does not exist, is not on the edit's branch, or gives the model no
// content to edit.
func (t *Tree) checkEditTarget(e *Entry, added map[string]*Entry) error {
	targetID := e.TargetID()
	refuse := func(reason string) error { return &TargetError{Op: "context edit", ID: targetID, Reason: reason} }
	target, inTree := t.lookup(targetID)
	var te *Entry
	switch {
	case inTree:
		te = t.entries[target]
		if te == nil && t.typeAt(target) != TypeMessage && t.typeAt(target) != TypeCustomMessage {
			// A partial tree knows the type of an entry it has not loaded.
			return refuse(editable(&Entry{Type: t.typeAt(target)}))
		}
	case added[targetID] != nil:
		te = added[targetID]
	default:
		return refuse(reasonMissing)
	}
	if te != nil {
		if why := editable(te); why != "" {
			return refuse(why)
		}
	}
	// The target must be an ancestor: the edit applies on its branch.
	for id := e.ParentID; id != ""; {
		if id == targetID {
			return nil
		}
		if b := added[id]; b != nil {
			id = b.ParentID
			continue
		}
		i, ok := t.lookup(id)
		if !ok {
			break
		}
		p := t.parent[i]
		if p < 0 {
			break
		}
		id = t.idAt(p)
	}
	return refuse("is not on the edit's branch (an edit applies to the entries above it)")
}

// label applies a label entry's body to the tree's labels.
func (t *Tree) label(b *Label, at string) {
	t.listed.Change(t.labels[b.TargetID].label, b.Label)
	if b.Label == "" {
		delete(t.labels, b.TargetID)
	} else if l, ok := t.labels[b.TargetID]; ok {
		t.labels[b.TargetID] = labelState{label: b.Label, at: at, order: l.order}
	} else {
		t.nlabel++
		t.labels[b.TargetID] = labelState{label: b.Label, at: at, order: t.nlabel}
	}
}
