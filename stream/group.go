package stream

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/session"
)

// Group commit: appends that go "after whatever is last" (FollowLeaf with
// the Rebase policy, no precondition) and arrive while another append of
// the same store is being published wait, then go together in one atomic
// batch, chained in arrival order — one round trip and one fsync for all
// of them instead of one each. If the batch fails as a whole, each append
// is retried alone, so each still gets its own answer.

// committer queues groupable appends; the first to find no commit in
// progress leads until the queue is empty.
type committer struct {
	mu      sync.Mutex
	queue   []*queued
	leading bool
}

type queued struct {
	ctx     context.Context
	span    trace.Span
	entries []*session.Entry
	done    chan queuedResult
}

type queuedResult struct {
	err     error
	outcome string
}

var groupOpts = AppendOptions{Policy: Rebase, FollowLeaf: true}

func groupable(entries []*session.Entry, opts AppendOptions) bool {
	return opts.FollowLeaf && opts.Policy == Rebase && opts.IfSequence == 0 && len(entries) < MaxBatch
}

func (s *Store) appendGrouped(ctx context.Context, span trace.Span, entries []*session.Entry, outcome *string) error {
	q := &queued{ctx: ctx, span: span, entries: entries, done: make(chan queuedResult, 1)}
	s.gc.mu.Lock()
	s.gc.queue = append(s.gc.queue, q)
	lead := !s.gc.leading
	s.gc.leading = true
	s.gc.mu.Unlock()
	if lead {
		s.lead(ctx)
	}
	r := <-q.done // the leader answers every append it takes
	*outcome = r.outcome
	return r.err
}

// lead commits groups until the queue is empty. The commits of others'
// appends must not end with the leader's context.
func (s *Store) lead(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for {
		s.gc.mu.Lock()
		n, size := 0, 0
		for n < len(s.gc.queue) && size+len(s.gc.queue[n].entries) <= MaxBatch {
			size += len(s.gc.queue[n].entries)
			n++
		}
		group := s.gc.queue[:n:n]
		s.gc.queue = s.gc.queue[n:]
		if n == 0 {
			s.gc.leading = false
			s.gc.mu.Unlock()
			return
		}
		s.gc.mu.Unlock()
		s.commitGroup(ctx, group)
	}
}

func (s *Store) commitGroup(ctx context.Context, group []*queued) {
	if len(group) > 1 {
		var all []*session.Entry
		var traces []context.Context
		for i, q := range group {
			if i > 0 {
				prev := group[i-1].entries
				q.entries[0].ParentID = prev[len(prev)-1].ID
			}
			for range q.entries {
				traces = append(traces, q.ctx)
			}
			all = append(all, q.entries...)
		}
		outcome := "ok"
		err := s.appendWith(ctx, trace.SpanFromContext(ctx), all, traces, groupOpts, &outcome)
		if err == nil {
			for _, q := range group {
				q.span.AddEvent("sessionlog.group_commit", trace.WithAttributes(attribute.Int("sessionlog.group.appends", len(group)), attribute.Int("sessionlog.group.entries", len(all))))
				q.done <- queuedResult{outcome: outcome}
			}
			return
		}
		// Something in the batch was refused: every append on its own.
	}
	for _, q := range group {
		outcome := "ok"
		err := s.appendWith(q.ctx, q.span, q.entries, nil, groupOpts, &outcome)
		q.done <- queuedResult{err: err, outcome: outcome}
	}
}
