package stream

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// ConflictPolicy says what Append does when another writer appended to the
// session since this store last saw it.
type ConflictPolicy int

const (
	// ReturnConflict catches up and returns a *session.ConflictError
	// carrying the new leaf; nothing is written.
	ReturnConflict ConflictPolicy = iota
	// Rebase catches up and, when the refused entries were meant for the
	// leaf, re-parents the first onto the new leaf and retries.
	Rebase
	// Retry catches up and retries the entries as they are, with the
	// parents they name: for appends whose parent was chosen on purpose,
	// which another writer's entries do not invalidate.
	Retry
)

// AppendOptions shape one AppendWith call.
type AppendOptions struct {
	// Policy is the conflict policy of this call.
	Policy ConflictPolicy
	// FollowLeaf puts the first entry onto the leaf as it is when the
	// entries are stored (under the store's lock), whatever parent it was
	// given: for callers that share one store and mean "after whatever is
	// last". With Rebase it also follows other writers' appends.
	FollowLeaf bool
	// IfSequence, when non-zero, makes the append conditional: it is
	// stored only while the session's last stream sequence is IfSequence,
	// whatever Policy says; otherwise a *session.ConflictError reports
	// where the session is now.
	IfSequence uint64
}

// MaxRebases bounds the retries of the Rebase policy for one append.
const MaxRebases = 64

// MaxBatch is the most entries one atomic batch can carry.
const MaxBatch = 1000

// Store is one session kept in the stream. It implements session.Store;
// reads come from the tree it keeps, which holds every entry this store
// wrote or caught up with (Refresh catches up explicitly).
type Store struct {
	*session.TreeStore
	b      *Backend
	id     string
	policy ConflictPolicy

	// epoch is the sequence of the session's header: message ids carry it
	// so that a session deleted and created again is not mistaken for a
	// retry inside the dedupe window.
	epoch   uint64
	lastSeq uint64 // guarded by TreeStore's write lock (Update)

	idx *indexer

	// Snapshots: entries applied since the last one was scheduled
	// (guarded by the write lock) and the job that writes them.
	sinceSnap int
	snap      *job

	// A store opened from a snapshot skeleton has a partial tree: body
	// fetches its entries the first time something reads them (complete).
	// Both are guarded by the write lock; full is the lock-free fast path.
	body     func(ctx context.Context) ([]*session.Entry, error)
	full     atomic.Bool
	fallback error
}

var (
	_ session.Store         = (*Store)(nil)
	_ session.BatchAppender = (*Store)(nil)
	_ session.TreeHolder    = (*Store)(nil)
)

func newStore(b *Backend, t *session.Tree, epoch, lastSeq uint64, policy ConflictPolicy) *Store {
	s := &Store{b: b, id: t.Header().ID, policy: policy, epoch: epoch, lastSeq: lastSeq}
	s.idx = newIndexer(b, b.cfg.indexInterval())
	s.snap = newJob(time.Second, b.cfg.RequestTimeout, s.writeSnapshot)
	s.TreeStore = session.NewTreeStore(t, nil, nil)
	s.full.Store(!t.Partial())
	return s
}

// SnapshotPolicy says when a session's snapshot is due.
type SnapshotPolicy struct {
	Every        int
	OnCompaction bool
}

// Due reports whether entries just applied, after since others, call for
// a snapshot.
func (p SnapshotPolicy) Due(since int, entries []*session.Entry) bool {
	if p.Every > 0 && since >= p.Every {
		return true
	}
	if p.OnCompaction {
		for _, e := range entries {
			if e.Type == session.TypeCompaction {
				return true
			}
		}
	}
	return false
}

// Policy returns the snapshot policy of the config.
func (c Config) Policy() SnapshotPolicy {
	return SnapshotPolicy{Every: c.SnapshotEvery, OnCompaction: c.SnapshotOnCompaction}
}

// applied counts entries folded into the tree and schedules a snapshot
// when one is due. Called with the write lock held.
func (s *Store) applied(entries []*session.Entry) {
	s.sinceSnap += len(entries)
	if s.b.cfg.Policy().Due(s.sinceSnap, entries) {
		s.sinceSnap = 0
		s.snap.trigger()
	}
}

func (s *Store) writeSnapshot(ctx context.Context) error {
	var snap *Snapshot
	err := s.ReadTree(ctx, func(t *session.Tree) (err error) {
		snap, err = EncodeSnapshot(t, s.epoch, s.lastSeq)
		return err
	})
	if err != nil {
		return err
	}
	return s.b.SaveSnapshot(ctx, snap)
}

// complete loads the entries of a store opened from a snapshot skeleton,
// before the first read that needs them.
func (s *Store) complete(ctx context.Context) error {
	if s.full.Load() {
		return nil
	}
	return s.Update(ctx, func(t *session.Tree) error {
		if t.Partial() {
			fallback, err := s.b.complete(ctx, s.id, t, s.body)
			if err != nil {
				return err
			}
			s.fallback = fallback
		}
		s.body = nil
		s.full.Store(true)
		return nil
	})
}

// completeFor loads a partial tree's entries when one of entries reuses an
// id among them (a retry to compare, or a duplicate to report). Called
// with the write lock held.
func (s *Store) completeFor(ctx context.Context, t *session.Tree, entries []*session.Entry) error {
	if !t.Partial() {
		return nil
	}
	for _, e := range entries {
		if got, ok := t.Loaded(e.ID); ok && got == nil {
			fallback, err := s.b.complete(ctx, s.id, t, s.body)
			if err != nil {
				return err
			}
			s.fallback, s.body = fallback, nil
			s.full.Store(true)
			return nil
		}
	}
	return nil
}

// Partial reports whether the store still lacks the entries of the
// snapshot it was opened from (they are read on first need).
func (s *Store) Partial() bool { return !s.full.Load() }

// Fallback says why the snapshot body this store opened from was not used
// (its entries were read from the stream instead), or nil.
func (s *Store) Fallback(ctx context.Context) (err error) {
	_ = s.TreeStore.ReadTree(ctx, func(*session.Tree) error { err = s.fallback; return nil })
	return err
}

// The reads that need entries load them first.

// ReadTree implements session.TreeHolder.
func (s *Store) ReadTree(ctx context.Context, fn func(t *session.Tree) error) error {
	if err := s.complete(ctx); err != nil {
		return err
	}
	return s.TreeStore.ReadTree(ctx, fn)
}

// Get implements session.Store.
func (s *Store) Get(ctx context.Context, id string) (*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.Get(ctx, id)
}

// FindByType implements session.Store.
func (s *Store) FindByType(ctx context.Context, typ session.EntryType) ([]*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.FindByType(ctx, typ)
}

// PathToRoot implements session.Store.
func (s *Store) PathToRoot(ctx context.Context, id string) ([]*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.PathToRoot(ctx, id)
}

// Entries implements session.Store.
func (s *Store) Entries(ctx context.Context) ([]*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.Entries(ctx)
}

// Snapshot writes a snapshot of the session now (loading its entries first
// if it was opened from a skeleton).
func (s *Store) Snapshot(ctx context.Context) error { return s.writeSnapshot(ctx) }

// SnapshotStatus reports how many snapshots this store wrote and the last
// error.
func (s *Store) SnapshotStatus() (int, error) { return s.snap.status() }

// ID returns the session id.
func (s *Store) ID() string { return s.id }

// ReadTreeAt runs fn on the tree and the stream sequence it reflects,
// read together: no append lands between them.
func (s *Store) ReadTreeAt(ctx context.Context, fn func(t *session.Tree, seq uint64) error) error {
	return s.TreeStore.ReadTree(ctx, func(t *session.Tree) error { return fn(t, s.lastSeq) })
}

// Sequence returns the stream sequence of the last message this store has
// applied: what a reader waits for to see this store's writes.
func (s *Store) Sequence(ctx context.Context) (seq uint64, err error) {
	err = s.TreeStore.ReadTree(ctx, func(*session.Tree) error { seq = s.lastSeq; return nil })
	return seq, err
}

// Close lets a snapshot being written finish, writes the session's index
// record, and closes the store. It is idempotent.
func (s *Store) Close(ctx context.Context) error {
	s.snap.close() // before the tree closes: the job reads it
	err := s.idx.close(ctx)
	return errors.Join(err, s.TreeStore.Close(ctx))
}

// indexInterval is how often a store refreshes its session's index entry
// while it is being written to.
// Each write is a replicated, fsynced message: with many sessions being
// written at once, a shorter interval takes a visible share of the
// stream's write capacity from the appends themselves.
func (c Config) indexInterval() time.Duration { return time.Second }
