package servicetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/lincheck"
)

// LinClient calls the service and records each call, with its real-time
// call and return, in a history for the linearizability checker.
type LinClient struct {
	C  *api.Client
	H  *lincheck.History
	ID int // the client's number in the history
	// Timeout bounds one attempt of a call (default 5 s); Append tries
	// again until ctx ends.
	Timeout time.Duration
}

// Append appends one user message with the given id, under the leaf or
// only at ifSequence (non-zero), and records what came back.
func (l *LinClient) Append(ctx context.Context, session, id string, ifSequence uint64) lincheck.Output {
	in := lincheck.Input{Session: session, Kind: lincheck.Append, ID: id, IfSequence: ifSequence}
	entry := jsontext.Value(fmt.Sprintf(`{"type":"message","id":%q,"message":{"role":"user","content":"lin"}}`, id))
	call := time.Now()
	var out lincheck.Output
	// An append whose outcome is unknown is sent again, as it was (the
	// same id: stored at most once), until it has one: one operation
	// from the first call to the last answer.
	for {
		actx, cancel := context.WithTimeout(ctx, l.timeout())
		var r api.AppendReply
		err := l.C.Call(actx, api.OpAppend, api.AppendRequest{Session: session, Entries: []jsontext.Value{entry}, IfSequence: ifSequence}, &r)
		cancel()
		out = outcome(err, r.Leaf, r.Sequence)
		if !out.Unknown || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	l.H.Record(l.ID, in, call, time.Now(), out)
	return out
}

// timeout bounds one attempt.
func (l *LinClient) timeout() time.Duration {
	if l.Timeout > 0 {
		return l.Timeout
	}
	return 5 * time.Second
}

// Read opens the session (its leaf and sequence) and records it.
func (l *LinClient) Read(ctx context.Context, session string) lincheck.Output {
	in := lincheck.Input{Session: session, Kind: lincheck.Read}
	call := time.Now()
	var r api.SessionReply
	rctx, cancel := context.WithTimeout(ctx, l.timeout())
	defer cancel()
	err := l.C.Call(rctx, api.OpOpen, api.SessionRequest{Session: session}, &r)
	out := outcome(err, r.Session.Leaf, r.Sequence)
	// A read that got no answer changed nothing and says nothing: it is
	// left out of the history (kept, it only slows the checker down).
	if !out.Unknown {
		l.H.Record(l.ID, in, call, time.Now(), out)
	}
	return out
}

// outcome turns a reply into an output: a conflict states where the
// session is; any other error leaves the outcome unknown.
func outcome(err error, leaf string, seq uint64) lincheck.Output {
	var pe *api.Error
	switch {
	case err == nil:
		return lincheck.Output{Leaf: leaf, Sequence: seq}
	case errors.As(err, &pe) && pe.Code == api.CodeConflict:
		return lincheck.Output{Conflict: true, Leaf: pe.Leaf, Sequence: pe.Sequence}
	}
	return lincheck.Output{Unknown: true}
}
