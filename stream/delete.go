package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/blobs"
)

// Deleting a session: its messages, its index record, its snapshots and
// the blobs no other session names, with a report of what went. The
// bytes leave the disk when the file store reclaims their blocks (see the
// "Delete means gone" in docs/operations.md): JetStream has no per-message erase on
// streams that deny deletes, which ours do and cannot stop doing.

// DeleteReport says what deleting a session removed.
type DeleteReport struct {
	// Messages is how many of the session's messages were purged.
	Messages int
	// Snapshots is how many snapshot objects (skeleton and body each)
	// were deleted.
	Snapshots int
	// BlobsDeleted are the blobs only this session named, deleted now.
	BlobsDeleted int
	// BlobsShared are blobs another session names too: kept.
	BlobsShared int
	// BlobsYoung are blobs only this session named that were written or
	// named within the grace period: an append elsewhere may be about to
	// name them, so they are left to collection, which deletes them once
	// the grace period has passed if nothing names them then.
	BlobsYoung int
}

// Delete implements session.Repo (DeleteSession without its report).
func (b *Backend) Delete(ctx context.Context, id string) error {
	_, err := b.DeleteSession(ctx, id)
	return err
}

// DeleteSession deletes a session and everything stored for it alone.
// Consumers that already received entries keep them, and mirrors or
// sources of the stream do not see purges.
func (b *Backend) DeleteSession(ctx context.Context, id string) (DeleteReport, error) {
	var rep DeleteReport
	if err := session.ValidateSessionID(id); err != nil {
		return rep, err
	}
	root := b // the deployment's first partition holds the blob store
	b = b.partOf(id)
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	// Behind a read barrier: a replica behind the leader may not know the
	// session yet.
	_, err := b.freshLast(ctx, b.cfg.sessionSubjects(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return rep, fmt.Errorf("%w: %q", session.ErrSessionNotFound, id)
	}
	if err != nil {
		return rep, fmt.Errorf("stream: delete %s: %w", id, err)
	}
	// What the session names read first: after the purge nothing says.
	named := map[string]bool{}
	err = b.rq.ReadAll(ctx, b.cfg.Stream, b.cfg.sessionSubjects(id), true, func(msg jetstream.Msg, _ *jetstream.MsgMetadata) error {
		if names := msg.Headers().Get(blobs.Header); names != "" {
			for _, n := range strings.Split(names, ",") {
				named[n] = true
			}
		}
		rep.Messages++
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("stream: delete %s: %w", id, err)
	}
	if err := b.stream.Purge(ctx, jetstream.WithPurgeSubject(b.cfg.sessionSubjects(id))); err != nil {
		return rep, fmt.Errorf("stream: delete %s: %w", id, err)
	}
	// Purged, not deleted: no earlier revision of the record is kept.
	if err := b.kv.Purge(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return rep, fmt.Errorf("stream: delete %s from the index: %w", id, err)
	}
	if rep.Snapshots, err = b.snaps.Delete(ctx, id); err != nil {
		return rep, fmt.Errorf("stream: delete the snapshots of %s: %w", id, err)
	}
	if len(named) == 0 {
		return rep, nil
	}
	st, err := root.collect(ctx, named)
	if err != nil {
		return rep, fmt.Errorf("stream: delete the blobs of %s: %w", id, err)
	}
	rep.BlobsDeleted, rep.BlobsShared, rep.BlobsYoung = st.Deleted, st.Referenced+st.Raced, st.Young
	return rep, nil
}
