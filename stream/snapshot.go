package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
// tree order) in the object store, with metadata: format version, the
// stream sequence it covers, the session's epoch, the entry count and the
// body's SHA-256. Snapshots are never replaced in place (a reader would
// lose the chunks under it): each is a new object "<id>-<seq>", and a head
// record in a key-value bucket names the current one. The previous one is
// kept for readers still on it; older ones are deleted.
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

// snapshotHead is a session's current snapshot.
type snapshotHead struct {
	Object string `json:"object"`
	Prev   string `json:"prev,omitempty"`
	Seq    uint64 `json:"seq"`
	Epoch  uint64 `json:"epoch"`
}

func (b *Backend) head(ctx context.Context, id string) (snapshotHead, uint64, error) {
	e, err := b.heads.Get(ctx, id)
	if err != nil {
		return snapshotHead{}, 0, err
	}
	var h snapshotHead
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return snapshotHead{}, e.Revision(), fmt.Errorf("%w: head: %w", ErrBadSnapshot, err)
	}
	return h, e.Revision(), nil
}

// SaveSnapshotBody uploads a snapshot made by EncodeSnapshot and makes it
// the session's current one, unless a newer one is current already.
func (b *Backend) SaveSnapshotBody(ctx context.Context, id string, body []byte, entries int, epoch, seq uint64) error {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	newer := func(h snapshotHead) bool { return h.Epoch == epoch && h.Seq >= seq }
	if h, _, err := b.head(ctx, id); err == nil && newer(h) {
		return nil
	}
	name := fmt.Sprintf("%s-%d-%d", id, epoch, seq)
	sum := sha256.Sum256(body)
	meta := jetstream.ObjectMeta{
		Name: name,
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
	for range 8 {
		cur, rev, err := b.head(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			cur, rev = snapshotHead{}, 0
		case err != nil && !errors.Is(err, ErrBadSnapshot):
			return fmt.Errorf("stream: snapshot head %s: %w", id, err)
		case err == nil && newer(cur):
			_ = b.snaps.Delete(ctx, name) // lost the race to a newer one
			return nil
		}
		val, _ := json.Marshal(snapshotHead{Object: name, Prev: cur.Object, Seq: seq, Epoch: epoch})
		if rev == 0 {
			_, err = b.heads.Create(ctx, id, val)
		} else {
			_, err = b.heads.Update(ctx, id, val, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stream: snapshot head %s: %w", id, err)
		}
		if cur.Prev != "" && cur.Prev != name && cur.Prev != cur.Object {
			_ = b.snaps.Delete(ctx, cur.Prev) // best effort: an orphan only costs space
		}
		return nil
	}
	return fmt.Errorf("stream: snapshot head %s: too much contention", id)
}

// deleteSnapshots removes a session's snapshots and its head.
func (b *Backend) deleteSnapshots(ctx context.Context, id string) error {
	h, _, err := b.head(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	for _, name := range []string{h.Object, h.Prev} {
		if name == "" {
			continue
		}
		if err := b.snaps.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return err
		}
	}
	if err := b.heads.Delete(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
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
	head, _, err := b.head(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, 0, ErrNoSnapshot
	}
	if err != nil {
		return nil, 0, 0, err
	}
	res, err := b.snaps.Get(ctx, head.Object)
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
