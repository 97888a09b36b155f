package stream

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/blobs"
)

// Group commit. Writers sharing a session take turns: each append waits
// for the one before it to be acknowledged, so one session takes one
// append a round trip however many write to it. Appends that mean "after
// whatever is last" (AfterLeaf: Rebase with FollowLeaf, unconditional)
// queue instead, and whoever is first in the queue leads: it sends the
// appends waiting behind it too, chained one after another, as one atomic
// batch when they are enough to pay for one (sendCosts), and hands the
// lead to the next waiting.
//
// Each append keeps its own outcome: one that is a retry of an append
// already stored, or that does not fit the tree, is answered alone and
// left out of the batch; the rest are stored together or not at all. When
// the batch is not stored as sent (another writer came first, or its
// outcome is unknown), each append is made again on its own, after
// catching up, as if it had not been grouped.

// groupable says whether an append may be sent with others': AfterLeaf,
// under a context that checks it as strictly as any other write, and
// with no entry that moves the leaf elsewhere (the next append goes after
// the last entry of this one).
func groupable(ctx context.Context, opts AppendOptions, entries []*session.Entry) bool {
	if !opts.FollowLeaf || opts.Policy != Rebase || opts.IfSequence != 0 || opts.storedAt != nil || session.Lenient(ctx) {
		return false
	}
	return !slices.ContainsFunc(entries, func(e *session.Entry) bool { return e.Type == session.TypeLeaf })
}

// appendGroup is a store's queue of groupable appends; queue[0] leads.
type appendGroup struct {
	mu    sync.Mutex
	queue []*groupedAppend
}

type groupState int

const (
	queued  groupState = iota
	leading            // first in the queue: it sends
	taken              // in the batch its leader sends
	done               // err and outcome are its answer
)

// groupedAppend is one caller's append in the queue.
type groupedAppend struct {
	ctx     context.Context
	span    trace.Span
	store   *blobs.Store
	entries []*session.Entry
	opts    AppendOptions
	wake    chan struct{} // 1: it leads now, or it is done
	state   groupState    // under appendGroup.mu
	// Its answer, set by the leader that sent it.
	answered bool
	err      error
	outcome  string
}

// appendGrouped is appendWith's write of a groupable append.
func (s *Store) appendGrouped(ctx context.Context, span trace.Span, store *blobs.Store, entries []*session.Entry, opts AppendOptions, outcome *string) error {
	g := &s.group
	a := &groupedAppend{ctx: ctx, span: span, store: store, entries: entries, opts: opts, wake: make(chan struct{}, 1), outcome: "ok"}
	g.mu.Lock()
	g.queue = append(g.queue, a)
	if len(g.queue) == 1 {
		a.state = leading
	}
	for {
		switch a.state {
		case leading:
			g.mu.Unlock()
			s.lead(a)
			g.mu.Lock()
			continue
		case done:
			g.mu.Unlock()
			*outcome = a.outcome
			return a.err
		}
		g.mu.Unlock()
		select {
		case <-a.wake:
			g.mu.Lock()
		case <-ctx.Done():
			g.mu.Lock()
			switch a.state {
			case queued:
				// Not taken: it is not sent.
				g.queue = slices.DeleteFunc(g.queue, func(q *groupedAppend) bool { return q == a })
				g.mu.Unlock()
				return ctx.Err()
			case taken:
				// Its leader is using its entries: their answer comes
				// within the leader's bound (RequestTimeout).
				g.mu.Unlock()
				<-a.wake
				g.mu.Lock()
			}
		}
	}
}

// lead sends the appends at the queue's head, a the first, and passes the
// lead on.
func (s *Store) lead(a *groupedAppend) {
	g := &s.group
	g.mu.Lock()
	batch := g.take(&s.b.costs)
	g.mu.Unlock()

	if len(batch) == 1 {
		// Alone: the append as it would be made ungrouped, under its
		// caller's context.
		a.err = s.write(a.ctx, func(w writer) error {
			return s.appendLocked(a.ctx, a.span, w, a.store, a.entries, a.opts, &a.outcome)
		})
	} else {
		// Made for all of them: the leader's caller may go away, the
		// others still wait for their answers.
		ctx, cancel := s.b.withBound(context.WithoutCancel(a.ctx))
		err := s.write(ctx, func(w writer) error { return s.commitGroup(ctx, w, batch) })
		cancel()
		for _, b := range batch {
			if err != nil && !b.answered {
				b.err = err // its outcome, "ok" with an error, AppendWith counts as "error"
			}
		}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = g.queue[len(batch):]
	for _, b := range batch {
		b.state = done
		if b != a {
			b.wake <- struct{}{}
		}
	}
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.state = leading
		next.wake <- struct{}{}
	}
}

// take marks the appends the leader sends: the queue's head, and those
// after it when the entries waiting are worth an atomic batch (with the
// same blob store, and no more than MaxBatch entries).
func (g *appendGroup) take(costs *sendCosts) []*groupedAppend {
	head := g.queue[0]
	waiting := 0
	for _, q := range g.queue {
		waiting += len(q.entries)
	}
	n, count := 1, len(head.entries)
	if costs.size(waiting) > 1 {
		for _, q := range g.queue[1:] {
			if q.store != head.store || count+len(q.entries) > MaxBatch {
				break
			}
			n, count = n+1, count+len(q.entries)
		}
	}
	batch := g.queue[:n:n]
	for _, q := range batch {
		q.state = taken
	}
	return batch
}

// commitGroup sends the batch's appends as one atomic batch, as writer.
// The appends it answers are answered; the others get its error.
func (s *Store) commitGroup(ctx context.Context, w writer, batch []*groupedAppend) error {
	t := w.t
	var all []*session.Entry
	for _, a := range batch {
		all = append(all, a.entries...)
	}
	if err := s.completeFor(ctx, w, all); err != nil {
		return err
	}
	answer := func(a *groupedAppend, err error, outcome string) {
		a.err, a.outcome, a.answered = err, outcome, true
	}
	// Chained after the leaf, each append after the one before it that
	// fits; a retry of an append already stored, or one that does not
	// fit, is answered now.
	check := t.CheckBatches(ctx)
	tip := t.Leaf()
	var sent []*groupedAppend
	var chain []*session.Entry
	for _, a := range batch {
		if a.ctx.Err() != nil {
			answer(a, a.ctx.Err(), "error")
			continue
		}
		if stored(t, a.entries) {
			answer(a, nil, "duplicate")
			continue
		}
		first := a.entries[0]
		parent := first.ParentID
		first.ParentID = tip
		if err := check.Add(a.entries); err != nil {
			first.ParentID = parent
			answer(a, err, "error")
			continue
		}
		sent = append(sent, a)
		chain = append(chain, a.entries...)
		tip = a.entries[len(a.entries)-1].ID
	}
	if len(sent) == 0 {
		return nil
	}
	for _, a := range sent {
		if a.span.IsRecording() {
			a.span.AddEvent("sessionlog.grouped", trace.WithAttributes(attribute.Int("appends", len(sent)), attribute.Int("entries", len(chain))))
		}
	}
	if msgs, err := s.prepare(ctx, sent[0].store, chain); err == nil {
		sentAt := sinceStart()
		seq, dup, err := s.publish(ctx, msgs, s.resent(sent[0].span))
		if err == nil && !dup {
			if err := s.applyStored(w, chain, seq, sentAt); err != nil {
				return err
			}
			for _, a := range sent {
				answer(a, nil, "ok")
			}
			return nil
		}
	}
	// Not stored as one — another writer came first, the outcome is
	// unknown, an entry cannot be sent — each goes on its own, as if never
	// grouped. The first catches up as any append does, and finds the
	// batch if it was stored after all; the others then find themselves
	// stored.
	for _, a := range sent {
		err := s.appendLocked(ctx, a.span, w, a.store, a.entries, a.opts, &a.outcome)
		answer(a, err, a.outcome) // an error with "ok" is AppendWith's "error"
	}
	return nil
}
