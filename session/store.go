package session

import (
	"context"
	"fmt"
	"sync"
)

// Store keeps the entries of one session. Implementations: TreeStore
// (memory, and the base of the file and JetStream stores), filestore.Store,
// stream.Store. All methods are safe for concurrent use.
//
// Entries returned are shared with the store and must not be modified;
// slices returned are the caller's own. Every method returns ErrClosed
// after Close.
type Store interface {
	// Header returns the session header.
	Header(ctx context.Context) (Header, error)
	// Leaf returns the current leaf id ("" before the first entry). The
	// leaf is set by appending: an entry becomes the leaf, and a TypeLeaf
	// entry moves it to the entry it names, so every move is persisted.
	Leaf(ctx context.Context) (string, error)
	// Append stores e after checking it (Tree.Check): ErrInvalidEntry,
	// ErrDuplicateID, ErrParentNotFound, a *TargetError for a label of a
	// missing entry, or a store error. On error nothing is stored. The
	// store keeps e: the caller must not modify it afterwards.
	Append(ctx context.Context, e *Entry) error
	// Get returns the entry with the given id, or ErrEntryNotFound.
	Get(ctx context.Context, id string) (*Entry, error)
	// FindByType returns the entries of one type in append order.
	FindByType(ctx context.Context, t EntryType) ([]*Entry, error)
	// Label returns the label on an entry ("" if none).
	Label(ctx context.Context, id string) (string, error)
	// SessionName returns the session's name ("" if unnamed).
	SessionName(ctx context.Context) (string, error)
	// PathToRoot returns the entries from id up to the root, id first, or
	// ErrEntryNotFound. An empty id gives an empty path.
	PathToRoot(ctx context.Context, id string) ([]*Entry, error)
	// Entries returns every entry in append order.
	Entries(ctx context.Context) ([]*Entry, error)
	// Stats returns statistics over every entry of the session.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store. It is idempotent.
	Close(ctx context.Context) error
}

// BatchAppender is implemented by stores that append several entries
// atomically: all are stored or none is.
type BatchAppender interface {
	AppendBatch(ctx context.Context, entries []*Entry) error
}

// IDChecker is implemented by stores that can tell whether an id is used
// without loading the entry (Session uses it when making new ids).
type IDChecker interface {
	Has(ctx context.Context, id string) (bool, error)
}

// TreeHolder is implemented by stores that keep a materialised Tree; Session
// uses it to build views without copying entries. fn runs under the store's
// read lock and must not keep t.
type TreeHolder interface {
	ReadTree(ctx context.Context, fn func(t *Tree) error) error
}

// WriteAhead persists entries before a TreeStore applies them. It is called
// with the store's lock held, after the entries passed Check; if it returns
// an error nothing is applied, so it must leave nothing durable behind
// either.
type WriteAhead func(ctx context.Context, entries []*Entry) error

// TreeStore is a Store over an in-memory Tree. With no WriteAhead it is the
// in-memory backend; persistent backends supply one.
type TreeStore struct {
	mu      sync.RWMutex
	tree    *Tree
	wal     WriteAhead
	onClose func(ctx context.Context) error
	closed  bool
}

var (
	_ Store         = (*TreeStore)(nil)
	_ BatchAppender = (*TreeStore)(nil)
	_ TreeHolder    = (*TreeStore)(nil)
	_ IDChecker     = (*TreeStore)(nil)
)

// NewMemoryStore returns an empty in-memory store for the session h.
func NewMemoryStore(h Header) *TreeStore { return NewTreeStore(NewTree(h), nil, nil) }

// NewTreeStore returns a store over t. wal may be nil; onClose, if set,
// runs once on the first Close.
func NewTreeStore(t *Tree, wal WriteAhead, onClose func(ctx context.Context) error) *TreeStore {
	return &TreeStore{tree: t, wal: wal, onClose: onClose}
}

func (s *TreeStore) read(fn func(t *Tree) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return fn(s.tree)
}

// ReadTree implements TreeHolder.
func (s *TreeStore) ReadTree(ctx context.Context, fn func(t *Tree) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.read(fn)
}

// Update runs fn with the tree under the store's write lock. Stores that
// fold in entries written elsewhere (a stream's other writers) use it; fn
// must leave the tree consistent even when it fails.
func (s *TreeStore) Update(ctx context.Context, fn func(t *Tree) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return fn(s.tree)
}

// Header implements Store.
func (s *TreeStore) Header(ctx context.Context) (h Header, err error) {
	err = s.read(func(t *Tree) error { h = t.Header(); return nil })
	return h, err
}

// Leaf implements Store.
func (s *TreeStore) Leaf(ctx context.Context) (id string, err error) {
	err = s.read(func(t *Tree) error { id = t.Leaf(); return nil })
	return id, err
}

// Append implements Store.
func (s *TreeStore) Append(ctx context.Context, e *Entry) error {
	return s.AppendBatch(ctx, []*Entry{e})
}

// AppendBatch implements BatchAppender.
func (s *TreeStore) AppendBatch(ctx context.Context, entries []*Entry) error {
	return s.Update(ctx, func(t *Tree) error {
		if err := t.CheckBatch(entries); err != nil {
			return err
		}
		if s.wal != nil {
			if err := s.wal(ctx, entries); err != nil {
				return err
			}
		}
		for _, e := range entries {
			t.apply(e)
		}
		return nil
	})
}

// Has implements IDChecker.
func (s *TreeStore) Has(ctx context.Context, id string) (ok bool, err error) {
	err = s.read(func(t *Tree) error { ok = t.Has(id); return nil })
	return ok, err
}

// Get implements Store.
func (s *TreeStore) Get(ctx context.Context, id string) (e *Entry, err error) {
	err = s.read(func(t *Tree) error {
		var ok bool
		if e, ok = t.Get(id); !ok {
			return fmt.Errorf("%w: %q", ErrEntryNotFound, id)
		}
		return nil
	})
	return e, err
}

// FindByType implements Store.
func (s *TreeStore) FindByType(ctx context.Context, typ EntryType) (out []*Entry, err error) {
	err = s.read(func(t *Tree) error { out = t.FindByType(typ); return nil })
	return out, err
}

// Label implements Store.
func (s *TreeStore) Label(ctx context.Context, id string) (l string, err error) {
	err = s.read(func(t *Tree) error { l, _ = t.Label(id); return nil })
	return l, err
}

// SessionName implements Store.
func (s *TreeStore) SessionName(ctx context.Context) (n string, err error) {
	err = s.read(func(t *Tree) error { n = t.Name(); return nil })
	return n, err
}

// PathToRoot implements Store.
func (s *TreeStore) PathToRoot(ctx context.Context, id string) (p []*Entry, err error) {
	err = s.read(func(t *Tree) error { p, err = t.PathToRoot(id); return err })
	return p, err
}

// Entries implements Store.
func (s *TreeStore) Entries(ctx context.Context) (out []*Entry, err error) {
	err = s.read(func(t *Tree) error { out = append([]*Entry(nil), t.Entries()...); return nil })
	return out, err
}

// Stats implements Store.
func (s *TreeStore) Stats(ctx context.Context) (st Stats, err error) {
	err = s.read(func(t *Tree) error { st = t.Stats(); return nil })
	return st, err
}

// Close implements Store.
func (s *TreeStore) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.onClose != nil {
		return s.onClose(ctx)
	}
	return nil
}
