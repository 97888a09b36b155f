package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

// A fork copies a branch of a session into a new one. It never holds the
// session, nor the copy: the branch is chosen on a lean tree of the
// source (ids, parents, types: session.NewLeanTree), read from the
// stream; the entries are then read again and written in batches of at
// most MaxBatch entries and forkBatchBytes, through a store whose tree is
// lean too. Memory grows with the number of entries, not their size. A
// fork of a 367 MB session took the node from 0.5 to 2 GB, and NATS
// closed its connection as a slow consumer (issue 68, item 4).

// forkBatchBytes bounds the stored bytes of one batch a fork writes.
const forkBatchBytes = 4 << 20

// ForkReport is what a fork copied.
type ForkReport struct {
	// Copied is the number of entries copied, Bytes their stored size.
	Copied int
	Bytes  int64
	// Before is the user message a fork before stopped at, whole.
	Before *session.Entry
}

// Fork implements session.Repo: the selected branch is copied into the new
// session (ParentSession is the source's id) by CopyFork, then opened.
func (b *Backend) Fork(ctx context.Context, from string, p session.ForkPoint, h session.Header) (session.Store, session.ForkSelection, error) {
	dst, rep, err := b.CopyFork(ctx, from, p, h, nil)
	if err != nil {
		return nil, session.ForkSelection{}, err
	}
	id := dst.id
	if err := dst.Close(ctx); err != nil {
		return nil, session.ForkSelection{}, err
	}
	st, err := b.OpenStore(ctx, id)
	if err != nil {
		return nil, session.ForkSelection{}, err
	}
	sel := session.ForkSelection{Before: rep.Before}
	if sel.Entries, err = st.Entries(ctx); err != nil {
		st.Close(ctx)
		return nil, sel, err
	}
	return st, sel, nil
}

// CopyFork copies the branch of session from that p selects into new
// session h (its ParentSession the source's id), in bounded memory, and
// returns the new session's store — lean: for its header, leaf and
// listing, to be closed, not read — and what it copied. charge, when set,
// is told the stored bytes of each batch before it is written (a
// tenant's write rate). A fork that fails leaves no session behind.
func (b *Backend) CopyFork(ctx context.Context, from string, p session.ForkPoint, h session.Header, charge func(bytes int)) (*Store, ForkReport, error) {
	var rep ForkReport
	if err := session.ValidateSessionID(from); err != nil {
		return nil, rep, err
	}
	if err := session.ValidateSessionID(h.ID); err != nil {
		return nil, rep, err
	}
	src := b.partOf(from)
	// Everything acknowledged before the fork is in it: the leader's last
	// sequence of the session first, then reads (which a replica behind
	// may answer) until they reach it.
	subjects := src.cfg.sessionSubjects(from)
	fresh, err := src.freshLast(ctx, subjects)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, rep, fmt.Errorf("%w: %q", session.ErrSessionNotFound, from)
	}
	if err != nil {
		return nil, rep, err
	}
	var t *session.Tree
	var epoch, last uint64
	for attempt := 0; ; attempt++ {
		if t, epoch, last, err = src.loadTreeAs(ctx, from, session.NewLeanTree); err != nil {
			return nil, rep, err
		}
		if last >= fresh {
			break
		}
		if err := pause(ctx, attempt); err != nil {
			return nil, rep, fmt.Errorf("stream: fork of %s: the stream read is behind its leader: %w", from, err)
		}
	}
	sel, err := session.SelectFork(t, p)
	if err != nil {
		return nil, rep, err
	}
	t = nil // the selection is all that is needed of it
	h.ParentSession = from
	dst, err := b.partOf(h.ID).createStoreOf(ctx, h, session.NewLeanTree)
	if err != nil {
		return nil, rep, err
	}
	fail := func(err error) (*Store, ForkReport, error) {
		dst.Close(ctx)
		return nil, rep, errors.Join(err, b.Delete(context.WithoutCancel(ctx), h.ID))
	}
	// The place in the selection of each entry copied, and the parent it
	// takes there (entries out of the branch dropped, their children
	// re-parented: session.SelectFork).
	place := make(map[string]int, len(sel.Entries))
	for i, e := range sel.Entries {
		place[e.ID] = i
	}
	var before string
	if sel.Before != nil {
		before = sel.Before.ID
	}
	next := 0
	var batch []*session.Entry
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if charge != nil {
			charge(batchBytes)
		}
		if err := dst.AppendBatch(ctx, batch); err != nil {
			return err
		}
		rep.Copied += len(batch)
		rep.Bytes += int64(batchBytes)
		batch, batchBytes = batch[:0], 0
		return nil
	}
	seenHeader := false
	copyOne := func(m Message) error {
		switch {
		case m.Seq > last:
			return errPastEnd // written after the selection: not the fork's
		case m.Header != nil && !seenHeader:
			if m.Seq != epoch {
				return fmt.Errorf("%w: %s was created again (seq %d) during the fork", session.ErrSessionNotFound, from, m.Seq)
			}
			seenHeader = true
			return nil
		case m.Entry == nil:
			return nil
		}
		e := m.Entry
		if e.ID == before && rep.Before == nil {
			rep.Before = e
		}
		i, ok := place[e.ID]
		if !ok || i < next {
			return nil // not copied, or a copy of one copied already
		}
		if i != next {
			return fmt.Errorf("%w: %s: entry %q comes before %q in the stream", ErrCorrupt, from, e.ID, sel.Entries[next].ID)
		}
		e.ParentID = sel.Entries[i].ParentID
		next++
		batch = append(batch, e)
		batchBytes += m.Bytes
		if len(batch) == MaxBatch || batchBytes >= forkBatchBytes {
			return flush()
		}
		return nil
	}
	// Read again until the selection's last sequence is reached (a
	// replica behind may end a read early).
	for after, attempt := uint64(0), 0; ; attempt++ {
		var upTo uint64
		upTo, err = src.read(ctx, from, after, copyOne)
		if errors.Is(err, errPastEnd) || (err == nil && upTo >= last) {
			err = nil
			break
		}
		if err == nil {
			after, err = upTo, pause(ctx, attempt)
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		err = flush()
	}
	if err == nil && next != len(sel.Entries) {
		err = fmt.Errorf("%w: %s: %d of the branch's %d entries read again", ErrCorrupt, from, next, len(sel.Entries))
	}
	if err != nil {
		return fail(err)
	}
	return dst, rep, nil
}

// CreateForCopy implements session.CopyCreator: a store on a lean tree
// (an import's, a restore's: the copy is not held as it is written).
func (b *Backend) CreateForCopy(ctx context.Context, h session.Header) (session.Store, error) {
	if err := session.ValidateSessionID(h.ID); err != nil {
		return nil, err
	}
	return b.partOf(h.ID).createStoreOf(ctx, h, session.NewLeanTree)
}

var _ session.CopyCreator = (*Backend)(nil)

// pause waits a little longer each attempt, up to 50 ms, or until ctx
// ends.
func pause(ctx context.Context, attempt int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(min(time.Duration(attempt+1)*5*time.Millisecond, 50*time.Millisecond)):
		return nil
	}
}

// loadTreeAs is loadTree into the tree newTree makes.
func (b *Backend) loadTreeAs(ctx context.Context, id string, newTree func(session.Header) *session.Tree) (*session.Tree, uint64, uint64, error) {
	return b.loadTreeWith(ctx, id, func(ctx context.Context) (*session.Tree, uint64, uint64, error) {
		return b.readTreeAs(ctx, id, 0, math.MaxUint64, newTree)
	})
}
