package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// Opening a session: from its snapshot and the messages after it, or,
// without a usable snapshot, from the stream alone.

// OpenInfo says how a session was opened.
type OpenInfo struct {
	// FromSnapshot is set when a snapshot was used; SnapshotSeq is the
	// sequence it covered and Tail the entries read after it.
	FromSnapshot bool
	SnapshotSeq  uint64
	Tail         int
	// Fallback is why a snapshot that existed was not used.
	Fallback error
	// Deferred is set when the open read the snapshot's tip, not its
	// skeleton: the store answers its leaf, header and context from it,
	// and reads the skeleton when anything else is first asked.
	Deferred bool
	// Took is how long opening took.
	Took time.Duration
}

// opened is a session read from the stream: a tree (partial when it came
// from a snapshot skeleton), its epoch and last sequence, and how to get
// the entries a partial tree lacks.
type opened struct {
	tree        *session.Tree
	epoch, last uint64
	info        OpenInfo
	body        func(ctx context.Context) ([]*session.Entry, error)
	index       *snapshots.Index // reads some of the body's entries, if set
	// tip is set when tree is a stand-in made from the snapshot's tip
	// (openFromTip): the skeleton is read on first need.
	tip *tipOpen
}

// OpenStoreInfo is OpenStore also saying how the session was loaded.
func (b *Backend) OpenStoreInfo(ctx context.Context, id string) (*Store, OpenInfo, error) {
	if err := session.ValidateSessionID(id); err != nil {
		return nil, OpenInfo{}, err
	}
	b = b.partOf(id)
	ctx, cancel := b.withTimeout(ctx) // the whole call
	defer cancel()
	ctx, done := b.traceBuild(ctx, "sessionlog.open", id)
	o, err := b.openTree(ctx, id, true)
	if err != nil {
		done(nil, err)
		return nil, OpenInfo{}, err
	}
	done(o, nil)
	s := newStore(b, o.tree, o.epoch, o.last, b.policy)
	s.body, s.index = o.body, o.index
	if o.tip != nil {
		s.deferTo(o.tip)
	}
	uncovered := o.tree.Len()
	if o.info.FromSnapshot {
		uncovered = o.info.Tail
	}
	s.snap.Loaded(id, uncovered, o.info.FromSnapshot && o.index == nil && o.tip == nil)
	return s, o.info, nil
}

// openTree loads a session from its snapshot skeleton and the entries
// after it, or, without a usable snapshot, from the whole stream.
func (b *Backend) openTree(ctx context.Context, id string, tipOK bool) (*opened, error) {
	start := time.Now()
	o, err := b.openFromSnapshot(ctx, id, tipOK)
	if err == nil {
		o.info.Took = time.Since(start)
		return o, nil
	}
	var info OpenInfo
	if !errors.Is(err, snapshots.ErrNotFound) {
		info.Fallback = err
	}
	t, epoch, last, err := b.loadTree(ctx, id)
	info.Took = time.Since(start)
	if err != nil {
		return nil, err
	}
	return &opened{tree: t, epoch: epoch, last: last, info: info}, nil
}

// openFromSnapshot loads the session's snapshot and the messages after
// it. Those need only the head's sequence: they are read while the
// skeleton is (each a third of the time of a long session's open).
func (b *Backend) openFromSnapshot(ctx context.Context, id string, tipOK bool) (*opened, error) {
	head, err := b.snaps.Current(ctx, id)
	if err != nil {
		return nil, err
	}
	tail := b.prefetch(ctx, id, head.Seq)
	if tipOK && head.Tip {
		// A tip that does not serve (the tail reaches past it, or it
		// does not load) leaves the skeleton to read, as without one.
		if o, err := b.openFromTip(ctx, id, head, tail); err == nil {
			return o, nil
		}
	}
	ls, err := b.snaps.Load(ctx, id, &head)
	if err != nil {
		tail.cancel()
		tail.wait()
		return nil, err
	}
	msgs, last, err := tail.wait()
	if err != nil || ls.Seq != head.Seq {
		// Another snapshot replaced it meanwhile, or the read failed:
		// read from where the snapshot loaded ends.
		msgs = msgs[:0]
		last, err = b.read(ctx, id, ls.Seq, func(r Message) error { msgs = append(msgs, r); return nil })
		if err != nil {
			return nil, err
		}
	}
	if err := applyTail(ls.Tree.ApplyFrom, ls.Tree.Has, ls.Tree.Header(), ls.Tree.MeetHeader, msgs); err != nil {
		return nil, err
	}
	info := OpenInfo{FromSnapshot: true, SnapshotSeq: ls.Seq, Tail: len(msgs)}
	return &opened{tree: ls.Tree, epoch: ls.Epoch, last: last, info: info, body: ls.Body, index: ls.Index}, nil
}

// applyTail applies the messages read after a snapshot with apply (a
// tree's or a stand-in's, of the session h): entries each once (has:
// held already; copies of the header are passed over too), and another
// node's header of the session (created there too, while apart) with
// meet, nil for none taken.
func applyTail(apply func(origin string, e *session.Entry) error, has func(id string) bool, h session.Header, meet func(session.Header), msgs []Message) error {
	for _, r := range msgs {
		if r.Header != nil && sameHeader(*r.Header, h) {
			continue
		}
		if r.Header != nil && meet != nil {
			meet(*r.Header)
			continue
		}
		if r.Header != nil {
			return fmt.Errorf("%w: a header after the snapshot (seq %d)", snapshots.ErrUnusable, r.Seq)
		}
		if has(r.Entry.ID) {
			continue // a copy (a stream source's)
		}
		if err := apply(r.Origin, r.Entry); err != nil {
			return fmt.Errorf("%w: entry after the snapshot (seq %d): %w", snapshots.ErrUnusable, r.Seq, err)
		}
	}
	return nil
}

// tailRead is a read of a session's messages after a sequence, running
// while its caller does something else: wait returns them (cancel first
// when they are not wanted). The caller owns it and must wait.
type tailRead struct {
	cancel context.CancelFunc
	done   chan struct{}
	msgs   []Message
	last   uint64
	err    error
}

func (b *Backend) prefetch(ctx context.Context, id string, after uint64) *tailRead {
	ctx, cancel := context.WithCancel(ctx)
	t := &tailRead{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.last, t.err = b.read(ctx, id, after, func(r Message) error { t.msgs = append(t.msgs, r); return nil })
	}()
	return t
}

func (t *tailRead) wait() ([]Message, uint64, error) {
	<-t.done
	t.cancel()
	return t.msgs, t.last, t.err
}

// complete gives a partial tree its entries, through commit: from the
// snapshot body, or, when the body cannot be used, from the stream. It
// reports why the body was not used, if it was not. The reads happen
// before commit is called.
func (b *Backend) complete(ctx context.Context, id string, t *session.Tree, body func(context.Context) ([]*session.Entry, error), commit sessionkit.Commit) (fallback error, err error) {
	if !t.Partial() {
		return nil, nil
	}
	base, err := body(ctx)
	if err == nil {
		if err = commit(func(t *session.Tree) error { return t.Complete(base) }); err == nil || errors.Is(err, session.ErrClosed) {
			return nil, err
		}
	}
	fallback = err
	// A body that does not load must not be built on: the next snapshot
	// of the session is written whole.
	b.forgetSnapshot(id)
	full, _, _, err := b.loadTree(ctx, id)
	if err != nil {
		return fallback, err
	}
	n := t.Missing()
	if full.Len() < n {
		return fallback, fmt.Errorf("%w: %s holds %d entries, its snapshot %d", ErrCorrupt, id, full.Len(), n)
	}
	all, err := full.Entries()
	if err != nil {
		return fallback, err
	}
	return fallback, commit(func(t *session.Tree) error { return t.Complete(all[:n]) })
}

// own is the Commit of a tree nobody else holds yet.
func own(t *session.Tree) sessionkit.Commit {
	return func(change func(*session.Tree) error) error { return change(t) }
}
