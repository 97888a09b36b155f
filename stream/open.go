package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/session"
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
	index       *bodyIndex // reads some of the body's entries, if set
}

// openTree loads a session from its snapshot skeleton and the entries
// after it, or, without a usable snapshot, from the whole stream.
func (b *Backend) openTree(ctx context.Context, id string) (*opened, error) {
	start := time.Now()
	var info OpenInfo
	ls, err := b.loadSnapshot(ctx, id)
	if err == nil {
		t := ls.tree
		last, terr := b.read(ctx, id, ls.seq, func(r Message) error {
			if r.Header != nil {
				return fmt.Errorf("%w: a header after the snapshot (seq %d)", ErrBadSnapshot, r.Seq)
			}
			info.Tail++
			if err := t.Apply(r.Entry); err != nil {
				return fmt.Errorf("%w: entry after the snapshot (seq %d): %w", ErrBadSnapshot, r.Seq, err)
			}
			return nil
		})
		if terr == nil {
			info.FromSnapshot, info.SnapshotSeq, info.Took = true, ls.seq, time.Since(start)
			return &opened{tree: t, epoch: ls.epoch, last: last, info: info, body: ls.body, index: ls.index}, nil
		}
		err = terr
	}
	if !errors.Is(err, ErrNoSnapshot) {
		info.Fallback = err
	}
	info.Tail = 0
	t, epoch, last, err := b.loadTree(ctx, id)
	info.Took = time.Since(start)
	if err != nil {
		return nil, err
	}
	return &opened{tree: t, epoch: epoch, last: last, info: info}, nil
}

// complete gives a partial tree its entries, through commit: from the
// snapshot body, or, when the body cannot be used, from the stream. It
// reports why the body was not used, if it was not. The reads happen
// before commit is called.
func (b *Backend) complete(ctx context.Context, id string, t *session.Tree, body func(context.Context) ([]*session.Entry, error), commit session.Commit) (fallback error, err error) {
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
func own(t *session.Tree) session.Commit {
	return func(change func(*session.Tree) error) error { return change(t) }
}
