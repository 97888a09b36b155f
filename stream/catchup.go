package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/session"
)

// A store catches up by reading the session's messages after the last it
// applied. The read may be answered by a replica that is behind the
// stream's leader (see read), so "caught up" means caught up with that
// replica. Where the store must have seen every acknowledged write — a
// read that follows CatchUp, an append that lost its sequence check, an
// append whose caller has seen more than the store — it asks the leader
// for the session's last sequence and reads until it has reached it.

// CatchUp brings the store up to date with the stream at the cost of a read
// barrier and one direct get when nothing changed: it learns the
// session's last sequence and catches up only if that is newer than what
// the store holds. Reads that follow a CatchUp see every append acknowledged
// before it started. A session deleted since the store was opened gives
// session.ErrSessionNotFound; one deleted and created again gives
// ErrRecreated (the store cannot follow: open it again).
func (s *Store) CatchUp(ctx context.Context) error {
	ctx, cancel := s.b.withTimeout(ctx) // the whole call
	defer cancel()
	start := sinceStart()
	last, err := s.leaderLast(ctx)
	if err != nil {
		return err
	}
	if seq, err := s.Sequence(ctx); err != nil || seq >= last {
		if err == nil {
			s.fresh(start)
		}
		return err
	}
	// An append in flight may reach last first: catchUpTo then reads
	// nothing.
	err = s.write(ctx, func(w writer) error { return s.catchUpTo(ctx, w, last) })
	if err == nil {
		s.fresh(start)
	}
	return err
}

// CatchUpWithin is CatchUp for a reader that accepts an answer up to maxLag
// stale: one that misses no write acknowledged more than maxLag before
// the call. A store known to be that fresh — synced, or appended to with
// its sequence check, within maxLag — answers as it is, with no request
// at all; an older one catches up. maxLag <= 0 is CatchUp.
func (s *Store) CatchUpWithin(ctx context.Context, maxLag time.Duration) error {
	if at := s.freshAt.Load(); maxLag > 0 && at != 0 && sinceStart()-time.Duration(at) <= maxLag {
		return nil
	}
	return s.CatchUp(ctx)
}

// Staleness is how long ago the store was last known to hold every
// acknowledged write (false: never known so).
func (s *Store) Staleness() (time.Duration, bool) {
	at := s.freshAt.Load()
	return sinceStart() - time.Duration(at), at != 0
}

// fresh records that the store held every write acknowledged before at
// (a time from sinceStart), unless it was known fresher already.
func (s *Store) fresh(at time.Duration) {
	for {
		cur := s.freshAt.Load()
		if int64(at) <= cur || s.freshAt.CompareAndSwap(cur, int64(at)) {
			return
		}
	}
}

// started is when the process first asked: freshness is measured on the
// monotonic clock, never the wall clock, which may jump.
var started = time.Now()

func sinceStart() time.Duration { return max(time.Since(started), 1) }

// catchUpWithLeader is CatchUp for the writer.
func (s *Store) catchUpWithLeader(ctx context.Context, w writer) error {
	last, err := s.leaderLast(ctx)
	if err != nil {
		return err
	}
	return s.catchUpTo(ctx, w, last)
}

// catchUpPast catches up with the leader and, when the stream refused a
// write expecting sequence sent (moved is set), keeps at it for a moment
// until the store has seen the write that moved the session on: the
// leader refuses on a write still in flight, before it is applied and can
// be read. Reporting a conflict with the state the caller already had
// would be wrong; if the other write never takes, the caller sends its
// own again.
func (s *Store) catchUpPast(ctx context.Context, w writer, sent uint64, moved bool) error {
	span := trace.SpanFromContext(ctx)
	for attempt := 0; ; attempt++ {
		from := time.Now()
		err := s.catchUpWithLeader(ctx, w)
		if span.IsRecording() {
			span.AddEvent("sessionlog.catchup", trace.WithAttributes(attribute.Int("attempt", attempt),
				attribute.String("took", time.Since(from).Round(time.Millisecond).String()), attribute.Int64("at", int64(s.lastSeq))))
		}
		if err != nil || !moved || s.lastSeq > sent || attempt == inFlightPolls {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Millisecond):
		}
	}
}

// inFlightPolls bounds catchUpPast's wait for a write in flight (about
// 0.2 s): a replicated write is applied within milliseconds of its
// refusal of another, unless it fails.
const inFlightPolls = 20

// leaderLast is the sequence of the session's last message in a state of
// the stream that holds every write acknowledged before the call: the
// leader's, proven by a read barrier (see freshLast).
func (s *Store) leaderLast(ctx context.Context) (uint64, error) {
	rctx, cancel := s.b.withTimeout(ctx)
	defer cancel()
	last, err := s.b.freshLast(rctx, s.subjects)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, fmt.Errorf("%w: %s", session.ErrSessionNotFound, s.id)
	case err != nil:
		return 0, fmt.Errorf("stream: sync %s: %w", s.id, err)
	}
	return last, nil
}

// catchUpTo reads until the store has applied the stream's message
// target, waiting a little between reads for a replica that is behind.
func (s *Store) catchUpTo(ctx context.Context, w writer, target uint64) error {
	err := await.Until(ctx, await.Poll{First: 5 * time.Millisecond, Most: 100 * time.Millisecond}, nil, func() (bool, error) {
		if s.lastSeq >= target {
			return true, nil
		}
		err := s.catchUp(ctx, w)
		return s.lastSeq >= target, err
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("stream: sync %s: at %d, the stream at %d: %w", s.id, s.lastSeq, target, err)
	}
	return err
}

// catchUp reads the session's messages after the last applied and
// applies each in its own commit: readers see every state in between.
func (s *Store) catchUp(ctx context.Context, w writer) error {
	last, err := s.b.read(ctx, s.id, s.lastSeq, func(r Message) error {
		if r.Header != nil {
			if sameHeader(*r.Header, w.t.Header()) {
				// A copy of ours, stored twice by a stream source.
				return w.commit(func(*session.Tree) error { s.lastSeq = r.Seq; return nil })
			}
			// Sessions are created once on a node: a header after ours
			// is a new session of the same id, created after a delete —
			// unless ours is still there, and this one was created on
			// another node too, while apart: one session.
			if s.b.checkEpoch(ctx, s.id, s.epoch) == nil {
				return w.commit(func(t *session.Tree) error { t.MeetHeader(*r.Header); s.lastSeq = r.Seq; return nil })
			}
			return fmt.Errorf("%w: %s has a new header at seq %d", ErrRecreated, s.id, r.Seq)
		}
		return w.commit(func(t *session.Tree) error {
			if !t.Has(r.Entry.ID) { // else our own write, seen again after an ambiguous publish
				if err := t.ApplyFrom(r.Origin, r.Entry); err != nil {
					return fmt.Errorf("%w: %s seq %d: %w", ErrCorrupt, s.id, r.Seq, err)
				}
				s.applied([]*session.Entry{r.Entry})
			}
			s.lastSeq = r.Seq
			return nil
		})
	})
	if last > s.lastSeq {
		if cerr := w.commit(func(*session.Tree) error { s.lastSeq = last; return nil }); err == nil {
			err = cerr
		}
	}
	if err == nil {
		s.idx.touch(w.t.Info(), s.lastSeq)
	}
	return err
}
