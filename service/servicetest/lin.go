package servicetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/internal/lincheck"
	"github.com/agentcore/sessionlog/service"
)

// LinClient calls the service and records each call, with its real-time
// call and return, in a history for the linearizability checker.
type LinClient struct {
	C  *service.Client
	H  *lincheck.History
	ID int // the client's number in the history
}

// Append appends one user message with the given id, under the leaf or
// only at ifSequence (non-zero), and records what came back.
func (l *LinClient) Append(ctx context.Context, session, id string, ifSequence uint64) lincheck.Output {
	in := lincheck.Input{Session: session, Kind: lincheck.Append, ID: id, IfSequence: ifSequence}
	entry := jsontext.Value(fmt.Sprintf(`{"type":"message","id":%q,"message":{"role":"user","content":"lin"}}`, id))
	call := time.Now()
	var r service.AppendReply
	err := l.C.Call(ctx, service.OpAppend, service.AppendRequest{Session: session, Entries: []jsontext.Value{entry}, IfSequence: ifSequence}, &r)
	out := outcome(err, r.Leaf, r.Sequence)
	l.H.Record(l.ID, in, call, time.Now(), out)
	return out
}

// Read opens the session (its leaf and sequence) and records it.
func (l *LinClient) Read(ctx context.Context, session string) lincheck.Output {
	in := lincheck.Input{Session: session, Kind: lincheck.Read}
	call := time.Now()
	var r service.SessionReply
	err := l.C.Call(ctx, service.OpOpen, service.SessionRequest{Session: session}, &r)
	out := outcome(err, r.Session.Leaf, r.Sequence)
	l.H.Record(l.ID, in, call, time.Now(), out)
	return out
}

// outcome turns a reply into an output: a conflict states where the
// session is; any other error leaves the outcome unknown.
func outcome(err error, leaf string, seq uint64) lincheck.Output {
	var pe *service.Error
	switch {
	case err == nil:
		return lincheck.Output{Leaf: leaf, Sequence: seq}
	case errors.As(err, &pe) && pe.Code == service.CodeConflict:
		return lincheck.Output{Conflict: true, Leaf: pe.Leaf, Sequence: pe.Sequence}
	}
	return lincheck.Output{Unknown: true}
}
