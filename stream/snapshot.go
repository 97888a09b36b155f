package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
)

// SnapshotVersion is the snapshot format this version writes and reads.
// A snapshot of another version is ignored (the session is rebuilt).
const SnapshotVersion = 1

var (
	// ErrNoSnapshot is reported when a session has no snapshot.
	ErrNoSnapshot = errors.New("stream: no snapshot")
	// ErrBadSnapshot is reported for a snapshot that cannot be trusted:
	// another format version, a checksum or metadata mismatch, a body that
	// does not load, or one taken of an earlier session of the same id.
	ErrBadSnapshot = errors.New("stream: unusable snapshot")
)

// A snapshot is the session as a pi JSONL file (header and entries in
// tree order) in the object store, named by session id, with metadata:
// format version, the stream sequence it covers, the session's epoch, the
// entry count and the body's SHA-256.
const (
	metaVersion = "sessionlog-snapshot"
	metaSeq     = "seq"
	metaEpoch   = "epoch"
	metaEntries = "entries"
	metaSHA     = "sha256"
)

// OpenInfo says how a session was opened.
type OpenInfo struct {
	// FromSnapshot is set when a snapshot was used; SnapshotSeq is the
	// sequence it covered and Tail the entries read after it.
	FromSnapshot bool
	SnapshotSeq  uint64
	Tail         int
	// Fallback is why a snapshot that existed was not used.
	Fallback error
	// Took is how long opening took.
	Took time.Duration
}

// SaveSnapshot writes a snapshot of t, which must cover the session up to
// stream sequence seq and not change while this runs.
func (b *Backend) SaveSnapshot(ctx context.Context, t *session.Tree, epoch, seq uint64) error {
	h := t.Header()
	body, err := filestore.Encode(&h, t.Entries())
	if err != nil {
		return err
	}
	return b.saveSnapshotBody(ctx, h.ID, body, t.Len(), epoch, seq)
}

func (b *Backend) saveSnapshotBody(ctx context.Context, id string, body []byte, entries int, epoch, seq uint64) error {
	sum := sha256.Sum256(body)
	meta := jetstream.ObjectMeta{
		Name: id,
		Metadata: map[string]string{
			metaVersion: strconv.Itoa(SnapshotVersion),
			metaSeq:     strconv.FormatUint(seq, 10),
			metaEpoch:   strconv.FormatUint(epoch, 10),
			metaEntries: strconv.Itoa(entries),
			metaSHA:     hex.EncodeToString(sum[:]),
		},
	}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	if _, err := b.snaps.Put(ctx, meta, bytes.NewReader(body)); err != nil {
		return fmt.Errorf("stream: snapshot %s: %w", id, err)
	}
	return nil
}

// loadSnapshot reads and verifies a session's snapshot.
func (b *Backend) loadSnapshot(ctx context.Context, id string) (*session.Tree, uint64, uint64, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	info, err := b.snaps.GetInfo(ctx, id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, 0, 0, ErrNoSnapshot
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("stream: snapshot %s: %w", id, err)
	}
	md := info.Metadata
	if md[metaVersion] != strconv.Itoa(SnapshotVersion) {
		return nil, 0, 0, fmt.Errorf("%w: version %q", ErrBadSnapshot, md[metaVersion])
	}
	seq, err1 := strconv.ParseUint(md[metaSeq], 10, 64)
	epoch, err2 := strconv.ParseUint(md[metaEpoch], 10, 64)
	entries, err3 := strconv.Atoi(md[metaEntries])
	if err := errors.Join(err1, err2, err3); err != nil || epoch == 0 || seq < epoch {
		return nil, 0, 0, fmt.Errorf("%w: metadata %v", ErrBadSnapshot, md)
	}
	body, err := b.snaps.GetBytes(ctx, id)
	if err != nil {
		// The object store checks its own digest: a damaged body fails here.
		return nil, 0, 0, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != md[metaSHA] {
		return nil, 0, 0, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	ld, err := filestore.Load(body, "snapshot "+id, filestore.Strict)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	if ld.Tree.Header().ID != id || ld.Tree.Len() != entries {
		return nil, 0, 0, fmt.Errorf("%w: holds %q with %d entries, metadata says %q with %d", ErrBadSnapshot, ld.Tree.Header().ID, ld.Tree.Len(), id, entries)
	}
	// A snapshot of an earlier session of the same id (deleted, created
	// again) must not be used: its epoch names a header that is gone.
	msg, err := b.stream.GetMsg(ctx, epoch)
	if err != nil || msg.Subject != b.cfg.headerSubject(id) {
		return nil, 0, 0, fmt.Errorf("%w: taken of an earlier session %s (epoch %d)", ErrBadSnapshot, id, epoch)
	}
	return ld.Tree, epoch, seq, nil
}

// openTree loads a session from its snapshot and the entries after it,
// or, without a usable snapshot, from the whole stream.
func (b *Backend) openTree(ctx context.Context, id string) (*session.Tree, uint64, uint64, OpenInfo, error) {
	start := time.Now()
	var info OpenInfo
	t, epoch, seq, err := b.loadSnapshot(ctx, id)
	if err == nil {
		last, terr := b.read(ctx, id, seq, func(r record) error {
			if r.header != nil {
				return fmt.Errorf("%w: a header after the snapshot (seq %d)", ErrBadSnapshot, r.seq)
			}
			info.Tail++
			if err := t.Apply(r.entry); err != nil {
				return fmt.Errorf("%w: entry after the snapshot (seq %d): %w", ErrBadSnapshot, r.seq, err)
			}
			return nil
		})
		if terr == nil {
			info.FromSnapshot, info.SnapshotSeq, info.Took = true, seq, time.Since(start)
			return t, epoch, last, info, nil
		}
		err = terr
	}
	if !errors.Is(err, ErrNoSnapshot) {
		info.Fallback = err
	}
	info.Tail = 0
	t, epoch, last, err := b.loadTree(ctx, id)
	info.Took = time.Since(start)
	return t, epoch, last, info, err
}
