package jsx

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Resend runs fn, a request that is safe to repeat, with a deadline of
// AttemptTimeout each time, and runs it again while it fails in a way
// that leaves its outcome unknown and ctx allows.
//
// Appends are safe to repeat: the sequence precondition and the message
// ids make a second copy of one impossible (see the stream package's Store.AppendWith); reads
// change nothing. Repeating is what fails a client over quickly: a
// request sent to a stream leader that has just died or stopped gets no
// answer, while the same request sent again finds the new leader as soon
// as it is elected, or a replica to read from, on this server or, once the
// connection has moved, on another. An attempt in flight when the
// connection moves ends there: it was lost with the old one. onResend, if
// set, hears of each repeat.
func (r *Requester) Resend(ctx context.Context, fn func(ctx context.Context) error, onResend func(error)) error {
	pause, failing := resendPause, time.Now()
	for {
		err := r.attempt(ctx, fn)
		// A server that has not served a request for two attempt
		// timeouts — it answers none (a leader cut off from its quorum)
		// or only that it cannot (a node cut off from its cluster) — is
		// left for another: the connection is moved, and the resend goes
		// there. During an election this moves a client once or twice
		// for nothing; on a cut-off node it is the only way out.
		if err != nil && ctx.Err() == nil && time.Since(failing) >= 2*r.AttemptTimeout {
			from := r.NC.ConnectedServerName()
			if r.moveElsewhere() {
				if span := trace.SpanFromContext(ctx); span.IsRecording() {
					span.AddEvent("sessionlog.moved", trace.WithAttributes(attribute.String("from", from)))
				}
			}
			failing = time.Now()
		}
		// "Temporarily unavailable" is a server without a leader to ask;
		// "in process", a resend overtaking the copy being stored.
		retry := Ambiguous(err) || errors.Is(err, ErrMoved) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInProcess)
		if err == nil || !retry || ctx.Err() != nil {
			return err
		}
		if onResend != nil {
			onResend(err)
		}
		// An attempt that timed out has waited already, and one cut short
		// by a move is best sent again at once. The others come at once
		// (no server leads the stream yet, say): wait a little, longer
		// each time, but never much past the election.
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, ErrMoved) {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(pause):
			}
			pause = min(2*pause, maxResendPause)
		}
	}
}

// attempt runs fn once, until AttemptTimeout, the connection moves, or
// the partition elects a leader: a request sent while nobody led goes
// unanswered, and is best sent again at once to the leader just elected
// rather than after the attempt's timeout (which cost writers up to a
// second past each election).
func (r *Requester) attempt(ctx context.Context, fn func(ctx context.Context) error) error {
	interrupted := r.Interrupts.Next()
	actx, cancel := AttemptContext(ctx, r.AttemptTimeout)
	defer cancel()
	// Cut short by a move or an election, with no goroutine per attempt.
	stop := context.AfterFunc(interrupted, cancel)
	err := fn(actx)
	stop()
	if err == nil || ctx.Err() != nil {
		return err
	}
	if interrupted.Err() != nil {
		// Whatever it said, the attempt went to the server left behind,
		// or was sent while nobody led: again, to the new leader.
		return ErrMoved
	}
	return err
}

// moveElsewhere moves the connection to another of its servers, if it
// knows another, at most once per two attempt timeouts (however many
// calls find their server silent at once).
// It reports whether this call moved it.
func (r *Requester) moveElsewhere() bool {
	now := time.Now().UnixNano()
	last := r.lastMove.Load()
	if len(r.NC.Servers()) < 2 || now-last < int64(2*r.AttemptTimeout) || !r.lastMove.CompareAndSwap(last, now) {
		return false
	}
	return r.NC.ForceReconnect() == nil // best effort: a closed connection stays closed
}

// ErrMoved is an attempt cut short because the connection moved or the
// stream elected a leader: sent again at once.
var ErrMoved = errors.New("stream: attempt cut short: the connection moved, or a leader was elected")

const (
	resendPause    = 20 * time.Millisecond
	maxResendPause = 250 * time.Millisecond
)

// NoRetry leaves a publish that finds no stream listening to resend:
// nats.go's own retries (twice, 250 ms apart) would hold an attempt half
// a second past the election that ends the silence, and hide it from the
// election's cut.
var NoRetry = jetstream.WithRetryAttempts(0)
