package stream

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// Opening from a snapshot's tip. The skeleton of a long session is
// megabytes (every id, parent and type), and reading it is most of an
// open; a context needs only the leaf's context branch. A snapshot with a
// tip keeps that branch apart, and an open from it answers the leaf, the
// header and the context from the tip and the tail; the skeleton is read
// when anything else is first asked (sessionkit.NewDeferredTreeWriter).

// tipOpen is what an open from a tip keeps for the skeleton's load: the
// snapshot it was taken from, the tail read after it, and the stand-in.
type tipOpen struct {
	head    snapshots.Head
	tail    []Message
	last    uint64
	standIn *session.StandIn
}

// openFromTip makes the stand-in of an open from head's tip and the
// tail (see session.StandIn): an error when the tip does not load or the
// tail reaches past it, and the skeleton must be read.
func (b *Backend) openFromTip(ctx context.Context, id string, head snapshots.Head, tail *tailRead) (*opened, error) {
	var epochErr error
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { epochErr = b.checkEpoch(ctx, id, head.Epoch) })
	data, err := b.snaps.Tip(ctx, head)
	if err != nil {
		return nil, err
	}
	si, err := standIn(data, id)
	if err != nil {
		return nil, err
	}
	msgs, last, err := tail.wait()
	if err != nil {
		return nil, err
	}
	if err := applyTail(si.WithOrigin(head.Origin).ApplyFrom, si.Tree().Has, si.Tree().Header(), nil, msgs); err != nil {
		return nil, err // beyond the stand-in: the skeleton is read
	}
	wg.Wait()
	if epochErr != nil {
		return nil, epochErr
	}
	info := OpenInfo{FromSnapshot: true, SnapshotSeq: head.Seq, Tail: len(msgs), Deferred: true}
	return &opened{tree: si.Tree(), epoch: head.Epoch, last: last, info: info, tip: &tipOpen{head: head, tail: msgs, last: last, standIn: si}}, nil
}

// standIn decodes a tip, the header line then the leaf's branch, into
// its stand-in.
func standIn(data []byte, id string) (*session.StandIn, error) {
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	h, err := codec.DecodeHeader(lines[0])
	if err != nil || h.ID != id {
		var of string
		if h != nil {
			of = h.ID
		}
		return nil, fmt.Errorf("%w: tip of %q for %q (%v)", snapshots.ErrUnusable, of, id, err)
	}
	branch := make([]*session.Entry, len(lines)-1)
	for i, line := range lines[1:] {
		if branch[i], err = codec.DecodeEntry(line); err != nil {
			return nil, fmt.Errorf("%w: tip line %d: %w", snapshots.ErrUnusable, i+2, err)
		}
	}
	si, err := session.NewStandIn(*h, branch)
	if err != nil {
		return nil, fmt.Errorf("%w: tip: %w", snapshots.ErrUnusable, err)
	}
	return si, nil
}

// checkEpoch checks that the session's header is the one at epoch: a
// snapshot of an earlier session of the same id (deleted, created again)
// must not be used.
func (b *Backend) checkEpoch(ctx context.Context, id string, epoch uint64) error {
	msg, err := b.stream.GetMsg(ctx, epoch)
	if err != nil || !b.cfg.isHeaderSubject(msg.Subject, id) {
		return fmt.Errorf("%w: taken of an earlier session %s (epoch %d)", snapshots.ErrUnusable, id, epoch)
	}
	return nil
}

// loadSkeleton is the deferred load of a store opened from a tip: the
// snapshot's skeleton with the tail applied, the tree an open without the
// tip makes. When the snapshot is gone (two later ones replace it) or
// does not load, the session is read from the stream up to where the open
// read it.
func (b *Backend) loadSkeleton(ctx context.Context, id string, epoch uint64, o *tipOpen) (*session.Tree, *snapshots.Loaded, error) {
	head := o.head
	ls, err := b.snaps.LoadOnce(ctx, id, &head)
	if err == nil {
		if err = applyTail(ls.Tree.ApplyFrom, ls.Tree.Has, ls.Tree.Header(), ls.Tree.MeetHeader, o.tail); err == nil {
			return ls.Tree, ls, nil
		}
	}
	if ctx.Err() != nil {
		return nil, nil, err
	}
	t, _, _, err := b.readTree(ctx, id, epoch, o.last)
	return t, nil, err
}

// contextFromTip answers ContextBranch from a store's stand-in: ok is
// false when the store has loaded its tree, or the stand-in cannot say.
func (s *Store) contextFromTip(ctx context.Context, leaf string) (out []*session.Entry, ok bool, err error) {
	err = s.tree.ReadStandIn(ctx, func(_ *session.Tree, standIn bool) (err error) {
		if !standIn || !s.standIn.Answers(leaf) {
			return nil
		}
		out, err = s.standIn.ContextBranch(leaf)
		ok = err == nil
		return err
	})
	return out, ok, err
}
