package sessionkit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/agentcore/sessionlog/session"
)

// WriteAhead persists entries before a TreeStore applies them. It is called
// as the store's only writer, after the entries passed Check, without the
// readers' lock (readers go on answering from the entries applied so far);
// if it returns an error nothing is applied, so it must leave nothing
// durable behind either.
type WriteAhead func(ctx context.Context, entries []*session.Entry) error

// Commit makes one change to a store's tree under the readers' lock, held
// only while change runs: change must do no I/O. After Close it returns
// session.ErrClosed without calling change.
type Commit func(change func(t *session.Tree) error) error

// TreeStore is a session.Store over an in-memory session.Tree. With no WriteAhead it is the
// in-memory backend; persistent backends supply one, or keep a TreeWriter.
//
// Writers never hold up readers for their I/O: writers take turns (one
// writer at a time), read the tree without the lock while it is their
// turn (nobody else changes it), and take the lock only to apply what they
// have made durable.
type TreeStore struct {
	writer  chan struct{} // the writer's turn: a token, so waiting honours ctx
	mu      sync.RWMutex  // held by readers, and by a writer applying a change
	tree    *session.Tree
	wal     WriteAhead
	onClose func(ctx context.Context) error
	closed  bool
	closing atomic.Bool // closed, for lock-free readers
	// leaf is the tree's leaf as the last change left it, read without
	// the lock: the most frequent read never waits for a change.
	leaf atomic.Pointer[string]
	// deferred, while pending, loads the tree that replaces a stand-in
	// (NewDeferredTreeWriter); it is the writer's to call.
	deferred Deferred
	pending  atomic.Bool
}

// Deferred loads a store's tree (I/O: the backend's). A store made by
// NewDeferredTreeWriter calls it once, as its writer, before the first
// read or write that needs more than its stand-in answers; until it
// succeeds every such call tries again.
type Deferred func(ctx context.Context) (*session.Tree, error)

var (
	_ session.Store         = (*TreeStore)(nil)
	_ session.BatchAppender = (*TreeStore)(nil)
	_ session.TreeHolder    = (*TreeStore)(nil)
	_ session.IDChecker     = (*TreeStore)(nil)
)

// NewMemoryStore returns an empty in-memory store for the session h.
func NewMemoryStore(h session.Header) *TreeStore { return NewTreeStore(session.NewTree(h), nil, nil) }

// NewTreeStore returns a store over t. wal may be nil; onClose, if set,
// runs once on the first Close.
func NewTreeStore(t *session.Tree, wal WriteAhead, onClose func(ctx context.Context) error) *TreeStore {
	s := &TreeStore{writer: make(chan struct{}, 1), tree: t, wal: wal, onClose: onClose}
	s.noteLeaf()
	return s
}

// noteLeaf publishes the tree's leaf to lock-free readers. Called with the
// write lock held (or before the store is shared).
func (s *TreeStore) noteLeaf() {
	if l := s.tree.Leaf(); s.leaf.Load() == nil || *s.leaf.Load() != l {
		s.leaf.Store(&l)
	}
}

// TreeWriter changes a TreeStore's tree for a backend whose writes must do
// I/O before they know what to change: publishing to a stream, reading
// what other writers appended. The backend keeps it and never hands it
// to callers, who could otherwise change the tree without persisting.
type TreeWriter struct{ s *TreeStore }

// NewTreeWriter returns a store over t and its writer. The backend answers
// reads from the store and appends through the writer: it must not offer
// the store's own Append, which would change the tree without persisting.
func NewTreeWriter(t *session.Tree, onClose func(ctx context.Context) error) (*TreeStore, *TreeWriter) {
	s := NewTreeStore(t, nil, onClose)
	return s, &TreeWriter{s: s}
}

// NewDeferredTreeWriter is NewTreeWriter over a stand-in tree that
// answers Leaf, session.Header and ReadStandIn only: the session's leaf and
// header, and what a backend can tell from a part of the session (a
// context, say). Every other read, and every write, first replaces it with
// the tree load gives, which must hold the same leaf.
func NewDeferredTreeWriter(standIn *session.Tree, load Deferred, onClose func(ctx context.Context) error) (*TreeStore, *TreeWriter) {
	s, w := NewTreeWriter(standIn, onClose)
	s.deferred = load
	s.pending.Store(true)
	return s, w
}

// Deferred reports whether the store still answers from its stand-in.
func (s *TreeStore) Deferred() bool { return s.pending.Load() }

// ReadStandIn runs fn on the tree as it is, without loading a deferred
// one: standIn says whether t is the stand-in. fn runs under the read
// lock and must not keep t.
func (s *TreeStore) ReadStandIn(ctx context.Context, fn func(t *session.Tree, standIn bool) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return session.ErrClosed
	}
	return fn(s.tree, s.pending.Load())
}

// takeTurn waits for the writer's turn, or for ctx; the caller gives it
// back (<-s.writer). ctx's Done is asked for only when another writer has
// the turn: a deadline may make its timer on the first call.
func (s *TreeStore) takeTurn(ctx context.Context) error {
	select {
	case s.writer <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settle loads a deferred tree, taking the writer's turn for it.
func (s *TreeStore) settle(ctx context.Context) error {
	if err := s.takeTurn(ctx); err != nil {
		return err
	}
	defer func() { <-s.writer }()
	return s.load(ctx)
}

// load replaces the stand-in, if it is still there. Called as the writer.
func (s *TreeStore) load(ctx context.Context) error {
	if !s.pending.Load() {
		return nil
	}
	if s.closing.Load() {
		return session.ErrClosed
	}
	t, err := s.deferred(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.ErrClosed
	}
	s.tree, s.deferred = t, nil
	s.pending.Store(false)
	s.noteLeaf()
	return nil
}

// Write runs fn as the store's only writer, waiting for its turn while ctx
// allows. fn reads t freely without the lock, and changes it only through
// commit; readers meanwhile see the tree as the last commit left it.
func (w *TreeWriter) Write(ctx context.Context, fn func(t *session.Tree, commit Commit) error) error {
	return w.s.write(ctx, fn)
}

func (s *TreeStore) write(ctx context.Context, fn func(t *session.Tree, commit Commit) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.takeTurn(ctx); err != nil {
		return err
	}
	defer func() { <-s.writer }()
	if s.closing.Load() {
		return session.ErrClosed
	}
	if err := s.load(ctx); err != nil {
		return err
	}
	return fn(s.tree, s.commit)
}

func (s *TreeStore) commit(change func(t *session.Tree) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.ErrClosed
	}
	defer s.noteLeaf()
	return change(s.tree)
}

func (s *TreeStore) read(ctx context.Context, fn func(t *session.Tree) error) error {
	if s.pending.Load() {
		if err := s.settle(ctx); err != nil {
			return err
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return session.ErrClosed
	}
	return fn(s.tree)
}

// ReadTree implements TreeHolder.
func (s *TreeStore) ReadTree(ctx context.Context, fn func(t *session.Tree) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.read(ctx, fn)
}

// session.Header implements Store. A stand-in holds the session's header.
func (s *TreeStore) Header(ctx context.Context) (h session.Header, err error) {
	err = s.ReadStandIn(ctx, func(t *session.Tree, _ bool) error { h = t.Header(); return nil })
	return h, err
}

// Leaf implements Store. It takes no lock: see noteLeaf.
func (s *TreeStore) Leaf(ctx context.Context) (string, error) {
	if s.closing.Load() {
		return "", session.ErrClosed
	}
	return *s.leaf.Load(), nil
}

// Append implements Store.
func (s *TreeStore) Append(ctx context.Context, e *session.Entry) error {
	return s.AppendBatch(ctx, []*session.Entry{e})
}

// AppendBatch implements BatchAppender.
func (s *TreeStore) AppendBatch(ctx context.Context, entries []*session.Entry) error {
	return s.write(ctx, func(t *session.Tree, commit Commit) error {
		if err := t.CheckBatch(ctx, entries); err != nil {
			return err
		}
		if s.wal != nil {
			if err := s.wal(ctx, entries); err != nil {
				return err
			}
		}
		return commit(func(t *session.Tree) error { return t.ApplyChecked(entries) })
	})
}

// Has implements IDChecker.
func (s *TreeStore) Has(ctx context.Context, id string) (ok bool, err error) {
	err = s.read(ctx, func(t *session.Tree) error { ok = t.Has(id); return nil })
	return ok, err
}

// Get implements Store.
func (s *TreeStore) Get(ctx context.Context, id string) (e *session.Entry, err error) {
	err = s.read(ctx, func(t *session.Tree) (err error) { e, err = t.Get(id); return err })
	return e, err
}

// FindByType implements Store.
func (s *TreeStore) FindByType(ctx context.Context, typ session.EntryType) (out []*session.Entry, err error) {
	err = s.read(ctx, func(t *session.Tree) (err error) { out, err = t.FindByType(typ); return err })
	return out, err
}

// Label implements Store.
func (s *TreeStore) Label(ctx context.Context, id string) (l string, err error) {
	err = s.read(ctx, func(t *session.Tree) error { l, _ = t.Label(id); return nil })
	return l, err
}

// SessionName implements Store.
func (s *TreeStore) SessionName(ctx context.Context) (n string, err error) {
	err = s.read(ctx, func(t *session.Tree) error { n = t.Name(); return nil })
	return n, err
}

// PathToRoot implements Store.
func (s *TreeStore) PathToRoot(ctx context.Context, id string) (p []*session.Entry, err error) {
	err = s.read(ctx, func(t *session.Tree) error { p, err = t.PathToRoot(id); return err })
	return p, err
}

// Entries implements Store.
func (s *TreeStore) Entries(ctx context.Context) (out []*session.Entry, err error) {
	err = s.read(ctx, func(t *session.Tree) error {
		all, err := t.Entries()
		out = append([]*session.Entry(nil), all...)
		return err
	})
	return out, err
}

// session.Stats implements Store.
func (s *TreeStore) Stats(ctx context.Context) (st session.Stats, err error) {
	err = s.read(ctx, func(t *session.Tree) error { st = t.Stats(); return nil })
	return st, err
}

// Close implements Store. It waits, while ctx allows, for a write in
// flight to finish; one still running after that fails with session.ErrClosed
// when it comes to apply its entries.
func (s *TreeStore) Close(ctx context.Context) error {
	select {
	case s.writer <- struct{}{}:
		defer func() { <-s.writer }()
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.closing.Store(true)
	if s.onClose != nil {
		return s.onClose(ctx)
	}
	return nil
}
