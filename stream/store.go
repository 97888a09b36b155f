package stream

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// maxRebases bounds the retries of the Rebase policy for one append.
const maxRebases = 64

// MaxBatch is the most entries one atomic batch can carry.
const MaxBatch = 1000

// Store is one session kept in the stream. It implements session.Store;
// reads come from the tree it keeps, which holds every entry this store
// wrote or caught up with (CatchUp catches up with the stream).
//
// Readers never wait for a write in flight: appends, catch-ups and the
// loading of a partial tree take turns as the tree's writer (see
// sessionkit.TreeWriter), publishing and reading the stream without the
// readers' lock, and take that lock only to apply what the stream holds.
type Store struct {
	tree   *sessionkit.TreeStore
	writer *sessionkit.TreeWriter
	b      *Backend
	id     string
	policy ConflictPolicy

	// epoch is the sequence of the session's header: message ids carry it
	// so that a session deleted and created again is not mistaken for a
	// retry inside the dedupe window.
	epoch uint64
	// lastSeq is the sequence of the last message applied: changed with
	// the tree (in a commit), read with it.
	lastSeq uint64

	idx *indexer

	// group queues the appends that may be sent together (group.go).
	group appendGroup

	// subjects filter the session's messages; msgIDPrefix begins each
	// entry's message id. Made once: an append used to make them again.
	subjects, msgIDPrefix string
	// subject1 is where the store publishes, with a subject per session
	// (on an edge, once keptKnown).
	subject1 string
	// kept says the session stays on this edge (WithKeepLocal), known
	// once keptKnown (under keptMu): from its subjects, read on first
	// need.
	keptMu    sync.Mutex
	kept      bool
	keptKnown bool

	// standIn, set when the store was opened from a snapshot's tip, gives
	// contexts until the tree is loaded (never changed after the open).
	standIn *session.StandIn

	// freshAt is when the store was last known to hold every write
	// acknowledged before then (see Fresh): nanoseconds on sinceStart's
	// monotonic clock, 0 never.
	freshAt atomic.Int64

	// snap writes the session's snapshots when the policy says.
	snap *snapshots.Scheduler

	// A store opened from a snapshot skeleton has a partial tree: body
	// fetches its entries the first time something reads them (complete).
	// body is the writer's; fallback changes in a commit; full is the
	// lock-free fast path.
	body     func(ctx context.Context) ([]*session.Entry, error)
	full     atomic.Bool
	fallback error
	// index reads the entries a context needs from the snapshot body
	// alone (ContextBranch); nil for snapshots without one.
	index *snapshots.Index
}

var (
	_ session.ContextBrancher = (*Store)(nil)
	_ session.Store           = (*Store)(nil)
	_ session.BatchAppender   = (*Store)(nil)
	_ session.TreeHolder      = (*Store)(nil)
	_ session.IDChecker       = (*Store)(nil)
	_ session.BatchLimiter    = (*Store)(nil)
)

// MaxBatch implements session.BatchLimiter.
func (s *Store) MaxBatch() int { return MaxBatch }

func newStore(b *Backend, t *session.Tree, epoch, lastSeq uint64, policy ConflictPolicy) *Store {
	s := &Store{b: b, id: t.Header().ID, policy: policy, epoch: epoch, lastSeq: lastSeq}
	s.subjects = b.cfg.sessionSubjects(s.id)
	s.subject1 = b.cfg.subject(s.id, "")
	s.msgIDPrefix = s.id + ":" + strconv.FormatUint(epoch, 10) + ":"
	s.idx = newIndexer(b, b.cfg.indexInterval())
	s.snap = b.NewSnapshotScheduler(func(ctx context.Context, _ string) error {
		if t.Lean() {
			return nil // no content to snapshot (a fork's copy: session.NewLeanTree)
		}
		return s.writeSnapshot(ctx)
	})
	s.tree, s.writer = sessionkit.NewTreeWriter(t, nil)
	s.full.Store(!t.Partial())
	return s
}

// deferTo makes the store's tree, a stand-in made from a snapshot's tip,
// be replaced by the skeleton's on first need (see openFromTip).
func (s *Store) deferTo(o *tipOpen) {
	s.standIn = o.standIn
	s.full.Store(false) // complete and fill go through the writer: the load first
	s.tree, s.writer = sessionkit.NewDeferredTreeWriter(o.standIn.Tree(), func(ctx context.Context) (*session.Tree, error) {
		t, ls, err := s.b.loadSkeleton(ctx, s.id, s.epoch, o)
		if err != nil {
			return nil, err
		}
		// Called as the writer: body and index are the writer's.
		s.body, s.index = nil, nil
		if ls != nil {
			s.body, s.index = ls.Body, ls.Index
		}
		s.full.Store(!t.Partial())
		return t, nil
	}, nil)
}

// writer is the store's writer at work: the tree, which it reads without
// the lock, and commit, through which alone it changes the tree.
type writer struct {
	t      *session.Tree
	commit sessionkit.Commit
}

// write runs fn as the store's only writer (see sessionkit.TreeWriter).
func (s *Store) write(ctx context.Context, fn func(w writer) error) error {
	return s.writer.Write(ctx, func(t *session.Tree, commit sessionkit.Commit) error {
		return fn(writer{t: t, commit: commit})
	})
}

// applied counts entries folded into the tree for the snapshot policy.
// Called by the writer.
func (s *Store) applied(entries []*session.Entry) { s.snap.Applied(s.id, entries...) }

// writeSnapshot captures the tree as it is — a partial one too, without
// loading what the snapshot it was opened from holds — and saves it. Only
// when that snapshot cannot be built on is the tree loaded for it.
func (s *Store) writeSnapshot(ctx context.Context) error {
	capture := func(t *session.Tree) (src *snapshots.Source, err error) {
		return snapshots.Capture(t, s.epoch, s.lastSeq)
	}
	var src *snapshots.Source
	err := s.tree.ReadTree(ctx, func(t *session.Tree) (err error) { src, err = capture(t); return err })
	if err == nil {
		// Encoded outside the tree's lock: appends apply meanwhile.
		err = s.b.SaveSnapshot(ctx, src)
	}
	if !errors.Is(err, snapshots.ErrPartialSource) {
		return err
	}
	if err := s.ReadTree(ctx, func(t *session.Tree) (err error) { src, err = capture(t); return err }); err != nil {
		return err
	}
	return s.b.SaveSnapshot(ctx, src)
}

// complete loads the entries of a store opened from a snapshot skeleton,
// before the first read that needs them.
func (s *Store) complete(ctx context.Context) error {
	if s.full.Load() {
		return nil
	}
	return s.write(ctx, func(w writer) error { return s.fill(ctx, w) })
}

// completeFor loads a partial tree's entries when one of entries reuses an
// id among them (a retry to compare, or a duplicate to report).
func (s *Store) completeFor(ctx context.Context, w writer, entries []*session.Entry) error {
	if !w.t.Partial() {
		return nil
	}
	for _, e := range entries {
		if got, ok := w.t.Loaded(e.ID); ok && got == nil {
			return s.fill(ctx, w)
		}
	}
	return nil
}

// fill gives a partial tree its entries.
func (s *Store) fill(ctx context.Context, w writer) error {
	if !w.t.Partial() {
		return nil
	}
	fallback, err := s.b.complete(ctx, s.id, w.t, s.body, w.commit)
	if err != nil {
		return err
	}
	s.body = nil
	s.full.Store(true)
	return w.commit(func(*session.Tree) error { s.fallback = fallback; return nil })
}

// Partial reports whether the store still lacks the entries of the
// snapshot it was opened from (they are read on first need).
func (s *Store) Partial() bool { return !s.full.Load() }

// fallbackErr says why the snapshot body this store opened from was not
// used (its entries were read from the stream instead), or nil.
func (s *Store) fallbackErr(ctx context.Context) (err error) {
	_ = s.tree.ReadTree(ctx, func(*session.Tree) error { err = s.fallback; return nil })
	return err
}

// Reads that a partial tree answers from its skeleton.

// Header implements session.Store.
func (s *Store) Header(ctx context.Context) (session.Header, error) { return s.tree.Header(ctx) }

// Leaf implements session.Store.
func (s *Store) Leaf(ctx context.Context) (string, error) { return s.tree.Leaf(ctx) }

// Label implements session.Store.
func (s *Store) Label(ctx context.Context, id string) (string, error) { return s.tree.Label(ctx, id) }

// SessionName implements session.Store.
func (s *Store) SessionName(ctx context.Context) (string, error) { return s.tree.SessionName(ctx) }

// Stats implements session.Store.
func (s *Store) Stats(ctx context.Context) (session.Stats, error) { return s.tree.Stats(ctx) }

// Has implements session.IDChecker.
func (s *Store) Has(ctx context.Context, id string) (bool, error) { return s.tree.Has(ctx, id) }

// The reads that need entries load them first.

// Bytes is about how much memory the session's tree holds now
// (session.Tree.Bytes); a deferred tree is not loaded to say.
func (s *Store) Bytes() int64 {
	var n int64
	s.tree.ReadStandIn(context.Background(), func(t *session.Tree, _ bool) error { n = t.Bytes(); return nil })
	return n
}

// ReadTree implements session.TreeHolder.
func (s *Store) ReadTree(ctx context.Context, fn func(t *session.Tree) error) error {
	if err := s.complete(ctx); err != nil {
		return err
	}
	return s.tree.ReadTree(ctx, fn)
}

// Entries handed out by Get, FindByType, PathToRoot and Entries hold
// their content: references are resolved (through the blob cache). The
// tree itself, as ReadTree shows it, holds the references; Refs reads
// them as stored.

// Get implements session.Store.
func (s *Store) Get(ctx context.Context, id string) (*session.Entry, error) {
	e, err := storedView{s}.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.b.blobs.Resolve(ctx, e)
}

// FindByType implements session.Store.
func (s *Store) FindByType(ctx context.Context, typ session.EntryType) ([]*session.Entry, error) {
	es, err := storedView{s}.FindByType(ctx, typ)
	return s.resolved(ctx, es, err)
}

// PathToRoot implements session.Store.
func (s *Store) PathToRoot(ctx context.Context, id string) ([]*session.Entry, error) {
	es, err := storedView{s}.PathToRoot(ctx, id)
	return s.resolved(ctx, es, err)
}

// Entries implements session.Store.
func (s *Store) Entries(ctx context.Context) ([]*session.Entry, error) {
	es, err := storedView{s}.Entries(ctx)
	return s.resolved(ctx, es, err)
}

// resolved is entries read as stored, with their content in place.
func (s *Store) resolved(ctx context.Context, es []*session.Entry, err error) ([]*session.Entry, error) {
	if err != nil {
		return nil, err
	}
	return s.b.blobs.ResolveAll(ctx, es)
}

// Snapshot writes a snapshot of the session now (loading its entries first
// if it was opened from a skeleton).
func (s *Store) Snapshot(ctx context.Context) error { return s.writeSnapshot(ctx) }

// ID returns the session id.
func (s *Store) ID() string { return s.id }

// ReadTreeAt runs fn on the tree and the stream sequence it reflects,
// read together: no append lands between them. Like ReadTree it loads the
// entries of a store opened from a snapshot first.
func (s *Store) ReadTreeAt(ctx context.Context, fn func(t *session.Tree, seq uint64) error) error {
	if err := s.complete(ctx); err != nil {
		return err
	}
	return s.ReadStateAt(ctx, fn)
}

// ReadStateAt is ReadTreeAt for what a tree answers without its entries
// — header, leaf, name, labels, stats, info — so a store opened from a
// snapshot stays partial: fn must read nothing else of t.
func (s *Store) ReadStateAt(ctx context.Context, fn func(t *session.Tree, seq uint64) error) error {
	return s.tree.ReadTree(ctx, func(t *session.Tree) error { return fn(t, s.lastSeq) })
}

// Sequence returns the stream sequence of the last message this store has
// applied: what a reader waits for to see this store's writes.
func (s *Store) Sequence(ctx context.Context) (seq uint64, err error) {
	err = s.tree.ReadTree(ctx, func(*session.Tree) error { seq = s.lastSeq; return nil })
	return seq, err
}

// Close lets a snapshot being written finish, writes the session's index
// record, and closes the store, waiting (while ctx allows) for an append
// in flight. It is idempotent.
func (s *Store) Close(ctx context.Context) error {
	s.snap.Close() // before the tree closes: a snapshot being written reads it
	err := s.idx.close(ctx)
	return errors.Join(err, s.tree.Close(ctx))
}

// indexInterval is how often a store refreshes its session's index entry
// while it is being written to.
// Each write is a replicated, fsynced message: with many sessions being
// written at once, a shorter interval takes a visible share of the
// stream's write capacity from the appends themselves.
func (c Config) indexInterval() time.Duration { return time.Second }

// Refs implements session.BlobHolder: the store read as stored, its
// entries holding references to offloaded content.
func (s *Store) Refs() session.Store { return storedView{s} }

// ResolveMessages implements session.BlobHolder.
func (s *Store) ResolveMessages(ctx context.Context, msgs []*session.Message) error {
	return s.b.blobs.ResolveMessagePtrs(ctx, msgs)
}

// ResolveEntry implements session.BlobHolder.
func (s *Store) ResolveEntry(ctx context.Context, e *session.Entry) (*session.Entry, error) {
	return s.b.blobs.Resolve(ctx, e)
}

// storedView is a Store whose reads leave references as they are.
type storedView struct{ *Store }

var _ session.BlobHolder = (*Store)(nil)

func (v storedView) Get(ctx context.Context, id string) (*session.Entry, error) {
	if err := v.complete(ctx); err != nil {
		return nil, err
	}
	return v.tree.Get(ctx, id)
}

func (v storedView) FindByType(ctx context.Context, typ session.EntryType) ([]*session.Entry, error) {
	if err := v.complete(ctx); err != nil {
		return nil, err
	}
	return v.tree.FindByType(ctx, typ)
}

func (v storedView) PathToRoot(ctx context.Context, id string) ([]*session.Entry, error) {
	if err := v.complete(ctx); err != nil {
		return nil, err
	}
	return v.tree.PathToRoot(ctx, id)
}

func (v storedView) Entries(ctx context.Context) ([]*session.Entry, error) {
	if err := v.complete(ctx); err != nil {
		return nil, err
	}
	return v.tree.Entries(ctx)
}

// maxContextRounds bounds the rounds of reading what a context needs
// (ContextNeeds asks again after the compaction and the messages it had
// to look at).
const maxContextRounds = 64

// ContextBranch implements session.ContextBrancher. A store opened from a
// snapshot reads only the entries the context needs, from the chunks of
// the body holding them; the others stay unread until something needs
// them.
func (s *Store) ContextBranch(ctx context.Context, leaf string) ([]*session.Entry, error) {
	if s.standIn != nil {
		if out, ok, err := s.contextFromTip(ctx, leaf); ok || err != nil {
			return out, err
		}
	}
	if !s.full.Load() {
		err := s.write(ctx, func(w writer) error {
			chunks := map[uint64][]byte{} // read in one round, kept for the next
			for range maxContextRounds {
				need, err := w.t.ContextNeeds(leaf)
				if err != nil || len(need) == 0 {
					return err
				}
				if s.index == nil {
					return s.fill(ctx, w)
				}
				es, err := s.b.snaps.EntriesAt(ctx, s.index, need, chunks)
				if err != nil {
					// The index cannot be used: the whole body (or the
					// stream) gives the entries, and the next snapshot
					// does not build on this one.
					s.index = nil
					s.b.snaps.Forget(s.id)
					return s.fill(ctx, w)
				}
				if err := w.commit(func(t *session.Tree) error { return t.Fill(need, es) }); err != nil {
					return err
				}
				if !w.t.Partial() {
					s.body = nil
					s.full.Store(true)
				}
			}
			return s.fill(ctx, w)
		})
		if err != nil {
			return nil, err
		}
	}
	var out []*session.Entry
	err := s.tree.ReadTree(ctx, func(t *session.Tree) (err error) {
		out, err = t.ContextBranch(leaf)
		return err
	})
	return out, err
}
