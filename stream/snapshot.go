package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

// EncodeSnapshot encodes the snapshot body of t, which covers the session
// of the given epoch up to stream sequence seq. t must not change while it
// runs; the upload (SaveSnapshotBody) can then happen without a lock.
func EncodeSnapshot(t *session.Tree, epoch, seq uint64) (body []byte, entries int, _, _ uint64, err error) {
	h := t.Header()
	body, err = filestore.Encode(&h, t.Entries())
	return body, t.Len(), epoch, seq, err
}

// SaveSnapshotBody uploads a snapshot made by EncodeSnapshot.
func (b *Backend) SaveSnapshotBody(ctx context.Context, id string, body []byte, entries int, epoch, seq uint64) error {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	// Another store or replica may have written a newer one already:
	// replacing it would only make readers start over.
	if info, err := b.snaps.GetInfo(ctx, id); err == nil {
		cur, _ := strconv.ParseUint(info.Metadata[metaSeq], 10, 64)
		if info.Metadata[metaEpoch] == strconv.FormatUint(epoch, 10) && cur >= seq {
			return nil
		}
	}
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
	if _, err := b.snaps.Put(ctx, meta, bytes.NewReader(body)); err != nil {
		return fmt.Errorf("stream: snapshot %s: %w", id, err)
	}
	return nil
}

// loadSnapshot reads and verifies a session's snapshot. A snapshot being
// replaced while it is read can fail its checks: that read is tried once
// more before the snapshot is given up.
func (b *Backend) loadSnapshot(ctx context.Context, id string) (*session.Tree, uint64, uint64, error) {
	t, epoch, seq, err := b.loadSnapshotOnce(ctx, id)
	if errors.Is(err, errSnapshotRead) {
		t, epoch, seq, err = b.loadSnapshotOnce(ctx, id)
	}
	return t, epoch, seq, err
}

var errSnapshotRead = errors.New("read failed")

func (b *Backend) loadSnapshotOnce(ctx context.Context, id string) (*session.Tree, uint64, uint64, error) {
	// Bounded even under a long caller deadline: a snapshot replaced while
	// it is read can leave the reader waiting for chunks that are gone.
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	res, err := b.snaps.Get(ctx, id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, 0, 0, ErrNoSnapshot
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w: %w", ErrBadSnapshot, errSnapshotRead, err)
	}
	defer res.Close()
	// The body's reader does not watch ctx; closing the result unblocks it.
	stop := context.AfterFunc(ctx, func() { res.Close() })
	defer stop()
	info, err := res.Info()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w: %w", ErrBadSnapshot, errSnapshotRead, err)
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
	// The object store checks its own digest as the body streams in: a
	// damaged body fails here.
	body, err := io.ReadAll(res)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w: %w", ErrBadSnapshot, errSnapshotRead, err)
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
