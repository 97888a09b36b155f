package snapshots

// Hooks let tests of the packages above this one (which cannot reach its
// test files) run something at a point of a save. Nil ones leave the
// store as it is. Set them before the store is used.
type Hooks struct {
	// BeforeHead runs when a save has written its objects and is about
	// to read the session's head to replace it.
	BeforeHead func(id string)
}

// SetHooks sets the hooks h holds.
func (sn *Store) SetHooks(h Hooks) {
	if h.BeforeHead != nil {
		sn.beforeHead = h.BeforeHead
	}
}
