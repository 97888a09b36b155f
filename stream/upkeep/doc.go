// Package upkeep keeps a deployment's streams in working order and says
// how they are: it reports their health (ReadHealth), spreads partition
// leaders over the servers (BalanceLeaders, Balancer), and repairs stream
// replicas that stopped coming back by themselves (Repairer). "Replica"
// here is JetStream's: a server's copy of a stream.
//
// The contract, for the stream package that uses it:
//   - Nothing here writes a session's data: every action is a request of
//     JetStream's API (a leader stepdown, a peer removal) that nats-server
//     carries out with its own safety (a stepdown elects among current
//     peers; a removed peer is replaced by a fresh copy).
//   - Several nodes may run the same upkeep at once: balancing re-decides
//     each move from a fresh count, and a repair is made only by the node
//     whose server leads the stream, so they converge rather than fight.
//   - Balancer and Repairer each own one goroutine; Close stops it and
//     waits for an action under way. Neither holds a lock across a
//     request.
package upkeep

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/telemetry"
)

// Deployment is what upkeep acts on: the deployment's connection and
// streams.
type Deployment struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Partitions are the partitions' session streams, in order.
	Partitions []jetstream.Stream
	// Streams names every stream the deployment's data lives in
	// (sessions, index, snapshots, blobs).
	Streams []string
	// AttemptTimeout bounds each ask of a stream's state (one that
	// electing leaves unanswered), RequestTimeout each action.
	AttemptTimeout, RequestTimeout time.Duration
	Tel                            *telemetry.T
}
