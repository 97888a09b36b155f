// Package jsx is the JetStream access the stream packages share: requests
// resent while their outcome is unknown (Requester.Resend), reads by
// direct get (GetBatch, EachOf, LastOf, GetSeqs), whole reads by ordered
// consumer (ReadAll), the object store's subjects, and the errors that
// tell an answer from a silence.
//
// A Requester belongs to one partition: its Interrupts fire when that
// partition's stream elects a leader or the connection moves, cutting
// attempts in flight short so that they go again at once. It holds no
// lock across a request and starts no goroutine; Moves, the one listener
// to the connection's status, is owned by whoever made it (Stop waits).
package jsx

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Requester sends one partition's requests.
type Requester struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// AttemptTimeout bounds one attempt of a resent request.
	AttemptTimeout time.Duration
	// Interrupts fires at the partition's elections and the connection's
	// moves (see Resend).
	Interrupts Signal
	lastMove   atomic.Int64 // unix nanos of the last moveElsewhere
}

// ReadAll reads the messages of stream on filter with an ordered
// consumer until none is pending: every message, headers only, or with
// headersOnly unset the last of each subject, whole. The filter must
// match a message: the caller checks first.
func (r *Requester) ReadAll(ctx context.Context, stream, filter string, headersOnly bool, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, HeadersOnly: headersOnly}
	if !headersOnly {
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	}
	cons, err := r.JS.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return fmt.Errorf("stream: read %s: %w", stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return fmt.Errorf("stream: read %s: %w", stream, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("stream: read %s: %w", stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if err := fn(msg, md); err != nil {
			return err
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// The object store's layout (NATS ADR-20), for the blobs and snapshot
// bodies read and written message by message: the stream of a bucket,
// the subject of an object's chunks (by its object id) and of its meta
// (by its name).

// ObjStream is the stream of object store bucket.
func ObjStream(bucket string) string { return "OBJ_" + bucket }

// ObjChunks is the subject of the chunks of the object stored as nuid.
func ObjChunks(bucket, nuid string) string { return "$O." + bucket + ".C." + nuid }

// ObjMeta is the subject of the description of the object called name.
func ObjMeta(bucket, name string) string {
	return "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// ObjMetas is the subject of every object's description.
func ObjMetas(bucket string) string { return "$O." + bucket + ".M.>" }

// A cluster still forming answers requests to create replicated assets
// with "no suitable peers" (10005) or "temporarily unavailable" (10008);
// the same request succeeds a little later.
var (
	ErrNoPeers     error = &jetstream.APIError{ErrorCode: 10005}
	ErrUnavailable error = &jetstream.APIError{ErrorCode: 10008}
)

// ErrInProcess is a resent message whose first copy the server is still
// storing (10158): its outcome is still unknown.
var ErrInProcess error = &jetstream.APIError{ErrorCode: 10158}

// Transient errors are those a request may meet while a cluster forms or
// elects: the same request succeeds a little later.
func Transient(err error) bool {
	return Ambiguous(err) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, ErrNoPeers) || errors.Is(err, ErrUnavailable)
}

// Ambiguous errors leave it unknown whether the server stored a message.
// A request in flight when the connection drops (its server died or was
// found silent by the pings) ends with ErrDisconnected before the client
// has reconnected elsewhere: sent again, it goes out once it has.
func Ambiguous(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrDisconnected)
}

// The server reports a failed sequence check as 10071, or as 10164 on a
// replicated stream with a write in flight.
var (
	errWrongLastSeq         = &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}
	errWrongLastSeqConstant = &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}
)

// IsWrongLastSeq is a write refused by its sequence check: another write
// came first.
func IsWrongLastSeq(err error) bool {
	return errors.Is(err, errWrongLastSeq) || errors.Is(err, errWrongLastSeqConstant)
}
