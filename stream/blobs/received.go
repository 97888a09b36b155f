package blobs

// Blobs taken in from another node: a hub's from its edges, an edge's
// from its hub. Entries that name blobs cross in the sessions streams;
// the blobs cross in the blob store's stream, sourced as the sessions
// streams are, onto subjects of their own:
//
//	$O.<bucket>.I.C.<nuid>   the chunks of a blob the other node stored
//	$O.<bucket>.I.M.<name>   its meta, as the other node last wrote it
//
// Apart from this node's own (its object store's), because the other
// node's meta messages are its own business: its touches, and its delete
// markers when its collection finds no entry of its own naming a blob —
// which says nothing of the entries here. So a received blob is read
// (and verified by its SHA-256: its content is its name) whatever the
// other node did since; it is collected here by this node's rule (no
// entry here names it, past the grace period) once the other node has
// deleted it too (while it holds the blob, an entry it writes may name
// it by a touch of its meta alone, the chunks never sent again), by
// purging, which sends nothing anywhere. And what a node received is never sent on as its
// own: a hub takes an edge's own blobs only; an edge takes the hub's
// own and what the hub received (its other edges'), its own coming back
// among them, kept once more (the price of not sending anything round).

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

func objInChunks(bucket, nuid string) string { return "$O." + bucket + ".I.C." + nuid }

func objInMeta(bucket, name string) string {
	return "$O." + bucket + ".I.M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// objInMetas is the filter of every received meta of a bucket.
func objInMetas(bucket string) string { return "$O." + bucket + ".I.M.>" }

// TakeIn is what the stream of the store of bucket takes in of the other
// node's, and onto which subjects (see above); an edge passes on what it
// received too.
func TakeIn(bucket string, edge bool) []jetstream.SubjectTransformConfig {
	o := "$O." + bucket
	take := []jetstream.SubjectTransformConfig{
		{Source: o + ".C.*", Destination: o + ".I.C.{{wildcard(1)}}"},
		{Source: o + ".M.*", Destination: o + ".I.M.{{wildcard(1)}}"},
	}
	if edge {
		take = append(take,
			jetstream.SubjectTransformConfig{Source: o + ".I.C.*", Destination: o + ".I.C.{{wildcard(1)}}"},
			jetstream.SubjectTransformConfig{Source: o + ".I.M.*", Destination: o + ".I.M.{{wildcard(1)}}"})
	}
	return take
}

// receivedMeta reads the meta of a received blob; nil when none came.
func (bl *Store) receivedMeta(ctx context.Context, name string) (*blobMeta, error) {
	m, err := bl.rq.LastOf(ctx, bl.streamName(), objInMeta(bl.bucket, name))
	if err != nil || m == nil {
		return nil, err
	}
	bm := &blobMeta{data: m.Data, seq: m.Sequence, at: m.Time}
	if err := json.Unmarshal(m.Data, &bm.info); err != nil {
		return nil, fmt.Errorf("blobs: received blob %s: meta: %w", name, err)
	}
	return bm, nil
}

// received reads ref's blob as another node sent it: its chunks, checked
// against the reference's size and SHA-256. A blob whose chunks have not
// all come (the link is slow, or down) is ErrNotFound.
func (bl *Store) received(ctx context.Context, ref session.BlobRef) ([]byte, error) {
	name := ref.SHA256
	m, err := bl.receivedMeta(ctx, name)
	if err != nil {
		return nil, err
	}
	if m == nil || m.info.NUID == "" {
		return nil, fmt.Errorf("%w: %s (neither stored here nor received from another node yet)", ErrNotFound, name)
	}
	data := make([]byte, 0, ref.Size)
	subject := objInChunks(bl.bucket, m.info.NUID)
	err = bl.rq.EachOf(ctx, bl.streamName(), subject, func(msg *jetstream.RawStreamMsg) error {
		if int64(len(data)+len(msg.Data)) > ref.Size {
			return fmt.Errorf("%w: %s: the received chunks exceed its %d bytes", ErrMismatch, name, ref.Size)
		}
		data = append(data, msg.Data...)
		return nil
	})
	if errors.Is(err, ErrMismatch) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: received blob %s: %w", name, err)
	}
	if int64(len(data)) != ref.Size {
		return nil, fmt.Errorf("%w: %s (%d of its %d bytes received so far)", ErrNotFound, name, len(data), ref.Size)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != name {
		return nil, fmt.Errorf("%w: %s: the received bytes have another SHA-256", ErrMismatch, name)
	}
	bl.count(ctx, "received", ref.Size)
	return data, nil
}

// purgeReceived purges a received blob: its meta and its chunks.
func (bl *Store) purgeReceived(ctx context.Context, name string, m *blobMeta) error {
	if err := bl.stream.Purge(ctx, jetstream.WithPurgeSubject(objInMeta(bl.bucket, name))); err != nil {
		return err
	}
	if m.info.NUID == "" {
		return nil
	}
	return bl.stream.Purge(ctx, jetstream.WithPurgeSubject(objInChunks(bl.bucket, m.info.NUID)))
}
