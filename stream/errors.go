package stream

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrIncompatibleStream is returned by Provision when a stream of the
	// configured name exists with settings that could lose or reject
	// session entries. The stream is left as it is.
	ErrIncompatibleStream = errors.New("stream: existing stream is incompatible")

	// ErrEntryTooLarge is returned by Append for an entry whose encoding is
	// larger than the server's max payload.
	ErrEntryTooLarge = errors.New("stream: entry larger than the server's max payload")

	// ErrCorrupt is returned when a session's messages cannot be read back
	// into a tree: an undecodable message, a missing header, an entry that
	// does not fit the tree. It is terminal: reading again gives it again.
	ErrCorrupt = errors.New("stream: session data is corrupt")

	// ErrRecreated is returned by a store (CatchUp, an append's
	// catching up) whose session was deleted and created again since the
	// store was opened: the store cannot follow the new one; open it
	// again. It is not corruption.
	ErrRecreated = errors.New("stream: session deleted and created again")

	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("stream: invalid config")
)

// The server reports a failed sequence check as 10071, or as 10164 on a
// replicated stream with a write in flight.
var (
	errWrongLastSeq         = &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}
	errWrongLastSeqConstant = &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}
)

func isWrongLastSeq(err error) bool {
	return errors.Is(err, errWrongLastSeq) || errors.Is(err, errWrongLastSeqConstant)
}

// A cluster still forming answers requests to create replicated assets
// with "no suitable peers" (10005) or "temporarily unavailable" (10008);
// the same request succeeds a little later.
var (
	errNoPeers     = &jetstream.APIError{ErrorCode: 10005}
	errUnavailable = &jetstream.APIError{ErrorCode: 10008}
)

// errInProcess is a resent message whose first copy the server is still
// storing (10158): its outcome is still unknown.
var errInProcess = &jetstream.APIError{ErrorCode: 10158}

func transient(err error) bool {
	return ambiguous(err) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, errNoPeers) || errors.Is(err, errUnavailable)
}

// errBatchSeen refuses an atomic batch holding a message id the stream
// has stored (10201): a batch resent after its first copy was stored and
// its acknowledgement lost. Whether all of ours is stored is read from the
// stream, never resent (it would be refused again).
var errBatchSeen = &jetstream.APIError{ErrorCode: 10201}

func isBatchSeen(err error) bool { return errors.Is(err, errBatchSeen) }

// ambiguous errors leave it unknown whether the server stored a message.
// A request in flight when the connection drops (its server died or was
// found silent by the pings) ends with ErrDisconnected before the client
// has reconnected elsewhere: sent again, it goes out once it has.
func ambiguous(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrDisconnected)
}
