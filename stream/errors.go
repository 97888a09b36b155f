package stream

import (
	"errors"

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

// errBatchSeen refuses an atomic batch holding a message id the stream
// has stored (10201): a batch resent after its first copy was stored and
// its acknowledgement lost. Whether all of ours is stored is read from the
// stream, never resent (it would be refused again).
var errBatchSeen = &jetstream.APIError{ErrorCode: 10201}

func isBatchSeen(err error) bool { return errors.Is(err, errBatchSeen) }
