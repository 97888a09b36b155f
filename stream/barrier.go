package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// A read that must see every acknowledged write cannot simply ask the
// stream's leader: after a partition heals, or a paused leader resumes,
// the old leader still takes itself for the leader for a moment and
// answers from a state without its successor's writes (the fault test's
// checker caught exactly that, with a reader on a cut-off node). Only a
// write proves who leads: the old leader cannot have one committed. So a
// fresh read first writes a barrier — an empty message on a subject of
// its own in the stream, outside every session — whose sequence B is
// then known to follow every write acknowledged before the read began,
// and reads the session's last sequence from a replica that has applied
// B (any replica answers a direct get; one behind B is asked again).

// barrierSubject is outside every session: "$" is no session id's.
func (c Config) barrierSubject() string { return c.Prefix + ".$sync.read.barrier" }

// barrierPurgeEvery is how many barriers are written between purges of
// the subject (each keeps the last).
const barrierPurgeEvery = 1024

// ErrNotSession is returned by Decode for a message of the stream that
// belongs to no session (a read barrier); readers of every session skip it.
var ErrNotSession = errors.New("stream: not a session's message")

// barrierCall is one barrier written for every caller that joined it
// before it was sent.
type barrierCall struct {
	done chan struct{}
	seq  uint64
	err  error
}

// barrierGroup lets concurrent fresh reads share barriers: a caller that
// comes while one is being written joins the next, which one of them
// writes once the current is answered (a barrier sent before a caller
// came would not do for it). Under load a read waits for at most two
// barriers, and the stream takes one barrier per round, not per read.
type barrierGroup struct {
	mu   sync.Mutex
	cur  *barrierCall // being written
	next *barrierCall // callers waiting for cur to be answered
}

// barrier returns the sequence of a barrier sent after the call began.
func (b *Backend) barrier(ctx context.Context) (uint64, error) {
	g := &b.barrierGroup
	g.mu.Lock()
	if g.cur == nil && g.next == nil {
		c := &barrierCall{done: make(chan struct{})}
		g.cur = c
		g.mu.Unlock()
		return b.writeBarrier(ctx, c)
	}
	if g.next == nil {
		g.next = &barrierCall{done: make(chan struct{})}
	}
	mine := g.next
	for {
		if g.next == mine && g.cur == nil {
			// The one before is answered and nobody has sent ours yet.
			g.cur, g.next = mine, nil
			g.mu.Unlock()
			return b.writeBarrier(ctx, mine)
		}
		wait := g.cur
		if g.next != mine {
			wait = mine // sent by another of its callers
		}
		g.mu.Unlock()
		select {
		case <-wait.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if wait == mine {
			return mine.seq, mine.err
		}
		g.mu.Lock()
	}
}

// writeBarrier writes c for everyone waiting on it. The writing does not
// stop when this caller gives up: the others still wait for it.
func (b *Backend) writeBarrier(ctx context.Context, c *barrierCall) (uint64, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.RequestTimeout)
	c.seq, c.err = b.sendBarrier(wctx)
	cancel()
	b.barrierGroup.mu.Lock()
	b.barrierGroup.cur = nil
	b.barrierGroup.mu.Unlock()
	close(c.done)
	return c.seq, c.err
}

// sendBarrier writes one barrier and returns its sequence.
func (b *Backend) sendBarrier(ctx context.Context) (uint64, error) {
	m := nats.NewMsg(b.cfg.barrierSubject())
	// Resends of one barrier are one message: a leader that cannot
	// commit (cut off, say) is not handed a new one each time.
	m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	var seq uint64
	err := b.rq.Resend(ctx, func(ctx context.Context) error {
		ack, err := b.js.PublishMsg(ctx, m, jsx.NoRetry)
		if err == nil {
			seq = ack.Sequence
		}
		return err
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("stream: read barrier: %w", err)
	}
	if b.barriers.Add(1)%barrierPurgeEvery == 0 {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.RequestTimeout)
		// Best effort: a failed purge leaves a few more empty messages
		// for the next one.
		_ = b.stream.Purge(pctx, jetstream.WithPurgeSubject(b.cfg.barrierSubject()), jetstream.WithPurgeKeep(1))
		cancel()
	}
	return seq, nil
}

// freshLast is the sequence of the last message on subject in a state of
// the stream that includes every write acknowledged before the call (see
// above). jetstream.ErrMsgNotFound: no message on subject.
func (b *Backend) freshLast(ctx context.Context, subject string) (uint64, error) {
	if b.solo(ctx) {
		r, err := b.readLast(ctx, subject)
		switch {
		case err != nil:
			return 0, err
		case r.fromStream && r.last == 0:
			return 0, jetstream.ErrMsgNotFound
		case r.fromStream:
			return r.last, nil
		}
		// Answered by a mirror, or nothing named who answered: the barrier.
	}
	from := time.Now()
	at, err := b.barrier(ctx)
	if err != nil {
		return 0, err
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddEvent("sessionlog.barrier", trace.WithAttributes(attribute.Int64("seq", int64(at)),
			attribute.String("took", time.Since(from).Round(time.Millisecond).String())))
	}
	for attempt := 0; ; attempt++ {
		r, err := b.readLast(ctx, subject)
		switch {
		case err != nil:
			return 0, err
		case r.upTo < at:
			// A replica that has not applied the barrier yet.
			if span.IsRecording() && attempt%10 == 0 {
				span.AddEvent("sessionlog.behind", trace.WithAttributes(attribute.Int64("upTo", int64(r.upTo)), attribute.Int("attempt", attempt)))
			}
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("stream: replicas behind the read barrier %d: %w", at, ctx.Err())
			case <-time.After(min(time.Duration(attempt+1)*2*time.Millisecond, 50*time.Millisecond)):
			}
		case r.last == 0:
			return 0, jetstream.ErrMsgNotFound
		default:
			return r.last, nil
		}
	}
}

// lastRead is one replica's answer to lastAndPosition.
type lastRead struct {
	last uint64 // the sequence of the subject's last message (0: none)
	upTo uint64 // how far the replica's copy of the stream goes
	// fromStream: the answer held a message and every message came from
	// the stream itself, not from a mirror serving its direct gets (by
	// their Nats-Stream).
	fromStream bool
}

// readLast is lastAndPosition, asked again while its outcome is unknown.
func (b *Backend) readLast(ctx context.Context, subject string) (r lastRead, err error) {
	err = b.rq.Resend(ctx, func(ctx context.Context) (err error) {
		r, err = b.lastAndPosition(ctx, subject)
		return err
	}, nil)
	return r, err
}

// lastAndPosition asks one replica, in one direct get, for the last
// message on subject and on the barrier subject.
func (b *Backend) lastAndPosition(ctx context.Context, subject string) (r lastRead, err error) {
	req := struct {
		MultiLast []string `json:"multi_last"`
	}{[]string{subject, b.cfg.barrierSubject()}}
	barrier := b.cfg.barrierSubject()
	seen, ours := false, true
	err = b.rq.Direct(ctx, b.cfg.Stream, req, func(m *jetstream.RawStreamMsg, _ uint64) error {
		seen = true
		if m.Header.Get(jetstream.StreamHeader) != b.cfg.Stream {
			ours = false
		}
		if m.Subject != barrier {
			r.last = max(r.last, m.Sequence)
		}
		return nil
	}, func(eob nats.Header) (err error) {
		if r.upTo, err = strconv.ParseUint(eob.Get("Nats-UpTo-Sequence"), 10, 64); err != nil {
			return fmt.Errorf("stream: direct get: end without a position: %w", jetstream.ErrInvalidJetStreamResponse)
		}
		return nil
	})
	if errors.Is(err, jsx.ErrNoMessages) {
		return lastRead{}, nil // not even a barrier: a replica that has none yet
	}
	r.fromStream = seen && ours
	return r, err
}
