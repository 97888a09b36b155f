package blobs

import "time"

// Hooks let tests, this package's and those of the packages above it
// (which cannot reach this package's test files), judge ages by a clock
// of their own and run something between reading a blob's meta and
// writing it. Nil ones leave the store as it is. Set them before the
// store is used.
type Hooks struct {
	// Now replaces the clock ages are judged by.
	Now func() time.Time
	// BeforeTouch runs when an append is about to touch a blob,
	// BeforeDelete when a collection is about to delete one.
	BeforeTouch, BeforeDelete func(name string)
}

// SetHooks sets the hooks h holds.
func (bl *Store) SetHooks(h Hooks) {
	if h.Now != nil {
		bl.now = h.Now
	}
	if h.BeforeTouch != nil {
		bl.beforeTouch = h.BeforeTouch
	}
	if h.BeforeDelete != nil {
		bl.beforeDelete = h.BeforeDelete
	}
}

// Fetches is how many blobs the store has read from its object store (a
// read from the cache is not one).
func (bl *Store) Fetches() int64 { return bl.fetches.Load() }
