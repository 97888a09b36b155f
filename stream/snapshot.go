package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/telemetry"
)

// snapshotVersion is the snapshot format this version writes and reads.
// A snapshot of another version is ignored (the session is rebuilt).
const snapshotVersion = 2

var (
	// ErrNoSnapshot is reported when a session has no snapshot.
	ErrNoSnapshot = errors.New("stream: no snapshot")
	// ErrBadSnapshot is reported for a snapshot that cannot be trusted:
	// another format version, a checksum or metadata mismatch, a body that
	// does not load, or one taken of an earlier session of the same id.
	ErrBadSnapshot = errors.New("stream: unusable snapshot")
)

// A snapshot is two objects in the object store: the skeleton (header,
// ids, parents, types, labels, name, stats: a few bytes per entry) and the
// body (the session as a pi JSONL file). Opening reads the skeleton only,
// so it costs about what the tail after it costs; the body is read when
// something first needs the entries. Metadata on the skeleton: format
// version, the stream sequence covered, the session's epoch, the entry
// count, and the SHA-256 of skeleton and body.
//
// Snapshots are never replaced in place (a reader would lose the chunks
// under it): each is a new pair "<id>-<epoch>-<seq>-<nuid>.skel/.body", and a head
// record in a key-value bucket names the current one. The previous pair is
// kept for readers still on it; older ones are deleted.
const (
	metaVersion = "sessionlog-snapshot"
	metaSeq     = "seq"
	metaEpoch   = "epoch"
	metaEntries = "entries"
	metaSHA     = "sha256"
	metaBodySHA = "body-sha256"
)

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

// SaveSnapshot uploads a snapshot and makes it the session's current one,
// unless a newer one is current already.
func (b *Backend) SaveSnapshot(ctx context.Context, snap *Snapshot) (err error) {
	b = b.partOf(snap.ID)
	ctx, end := b.traceSnapshot(ctx, "write", snap.ID)
	defer func() { end(err) }()
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	id, epoch, seq := snap.ID, snap.Epoch, snap.Seq
	newer := func(h snapshotHead) bool { return h.Epoch == epoch && h.Seq >= seq }
	if h, _, err := b.head(ctx, id); err == nil && newer(h) {
		return nil
	}
	// Unique per write: two writers snapshotting the same sequence must
	// not replace each other's objects, nor delete the one the head names.
	name := fmt.Sprintf("%s-%d-%d-%s", id, epoch, seq, nuid.Next())
	// The body first: a skeleton is only ever found once its body exists.
	// The skeleton then says where the body's chunks are.
	if snap.doc == nil {
		if _, err := b.snaps.PutBytes(ctx, name+".body", snap.Body); err != nil {
			return fmt.Errorf("stream: snapshot %s: %w", id, err)
		}
	} else {
		nuid, seqs, err := b.putBody(ctx, name+".body", snap.Body)
		if err != nil {
			return err
		}
		doc := *snap.doc
		doc.index(snap.Body, nuid, seqs)
		skel, err := msgpack.Marshal(&doc)
		if err != nil {
			return fmt.Errorf("stream: encode skeleton: %w", err)
		}
		snap.Skeleton = skel
	}
	meta := jetstream.ObjectMeta{
		Name: name + ".skel",
		Metadata: map[string]string{
			metaVersion: strconv.Itoa(snapshotVersion),
			metaSeq:     strconv.FormatUint(seq, 10),
			metaEpoch:   strconv.FormatUint(epoch, 10),
			metaEntries: strconv.Itoa(snap.Entries),
			metaSHA:     shaHex(snap.Skeleton),
			metaBodySHA: shaHex(snap.Body),
		},
	}
	if _, err := b.snaps.Put(ctx, meta, bytes.NewReader(snap.Skeleton)); err != nil {
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
			b.deleteSnapshot(ctx, name) // lost the race to another as new
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
			b.deleteSnapshot(ctx, cur.Prev) // best effort: an orphan only costs space
		}
		return nil
	}
	return fmt.Errorf("stream: snapshot head %s: too much contention", id)
}

// deleteSnapshot removes one snapshot's two objects.
func (b *Backend) deleteSnapshot(ctx context.Context, name string) error {
	_, err := b.deleteSnapshotObjects(ctx, name)
	return err
}

// deleteSnapshotObjects deletes a snapshot's skeleton and body and says
// how many there were.
func (b *Backend) deleteSnapshotObjects(ctx context.Context, name string) (int, error) {
	n := 0
	for _, obj := range []string{name + ".skel", name + ".body"} {
		err := b.snaps.Delete(ctx, obj)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// deleteSnapshots removes a session's snapshots and its head, and says
// how many objects went.
func (b *Backend) deleteSnapshots(ctx context.Context, id string) (int, error) {
	h, _, err := b.head(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range []string{h.Object, h.Prev} {
		if name == "" {
			continue
		}
		k, err := b.deleteSnapshotObjects(ctx, name)
		n += k
		if err != nil {
			return n, err
		}
	}
	if err := b.heads.Purge(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return n, err
	}
	return n, nil
}

// loadedSnapshot is a snapshot's skeleton, read and checked, and how to
// get its entries.
type loadedSnapshot struct {
	tree       *session.Tree // partial
	epoch, seq uint64
	body       func(ctx context.Context) ([]*session.Entry, error)
	// index, when the snapshot has one, reads entries of the body alone.
	index *bodyIndex
}

// loadSnapshot reads and verifies a session's current skeleton. A snapshot
// being replaced while it is read can fail its checks: that read is tried
// once more before the snapshot is given up.
func (b *Backend) loadSnapshot(ctx context.Context, id string) (ls *loadedSnapshot, err error) {
	ctx, end := b.traceSnapshot(ctx, "load", id)
	defer func() { end(err) }()
	ls, err = b.loadSnapshotOnce(ctx, id)
	if errors.Is(err, errSnapshotRead) {
		ls, err = b.loadSnapshotOnce(ctx, id)
	}
	return ls, err
}

// traceSnapshot spans and times a snapshot write or load.
func (b *Backend) traceSnapshot(ctx context.Context, op, id string) (context.Context, func(error)) {
	start := time.Now()
	ctx, span := b.tel.Tracer.Start(ctx, "sessionlog.snapshot."+op, trace.WithAttributes(telemetry.SessionKey.String(id), telemetry.StreamKey.String(b.cfg.Stream)))
	return ctx, func(err error) {
		outcome := "ok"
		if err != nil {
			outcome = "error"
			if errors.Is(err, ErrNoSnapshot) {
				outcome = "none"
			} else {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
		}
		b.tel.SnapshotDuration.Record(ctx, telemetry.Seconds(start), metric.WithAttributes(attribute.String("op", op), telemetry.OutcomeKey.String(outcome)))
		span.SetAttributes(telemetry.OutcomeKey.String(outcome))
		span.End()
	}
}

var errSnapshotRead = errors.New("read failed")

// getObject reads a whole object of the snapshots' store by direct gets
// — its description, then its chunks — like a session's messages: the
// object store's own reader creates a consumer, a proposal to the meta
// group, so every open from a snapshot waited out a lost meta leader. The
// size and SHA-256 digest the description gives are checked.
func (b *Backend) getObject(ctx context.Context, name string) ([]byte, *jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	var info *jetstream.ObjectInfo
	err := b.resend(ctx, func(ctx context.Context) (err error) {
		info, err = b.snaps.GetInfo(ctx, name)
		return err
	}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w: %s: %w", ErrBadSnapshot, errSnapshotRead, name, err)
	}
	if info.Size > uint64(maxSnapshotObject) {
		return nil, nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrBadSnapshot, name, info.Size, maxSnapshotObject)
	}
	data := make([]byte, 0, info.Size)
	stream, subject := objStream(b.cfg.SnapshotBucket()), objChunks(b.cfg.SnapshotBucket(), info.NUID)
	var last uint64
	for chunks := uint32(0); chunks < info.Chunks; {
		err := b.resend(ctx, func(ctx context.Context) error {
			end, err := b.getBatchOf(ctx, stream, subject, last+1, func(m *jetstream.RawStreamMsg, _ uint64) error {
				if uint64(len(data)+len(m.Data)) > info.Size {
					return fmt.Errorf("chunks exceed the object's %d bytes", info.Size)
				}
				data, last = append(data, m.Data...), m.Sequence
				chunks++
				return nil
			})
			if err == nil && end.pending == 0 && chunks < info.Chunks {
				err = fmt.Errorf("%d of %d chunks", chunks, info.Chunks)
			}
			return err
		}, nil)
		if errors.Is(err, errNoMessages) {
			err = fmt.Errorf("%d of %d chunks", chunks, info.Chunks)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w: %s: %w", ErrBadSnapshot, errSnapshotRead, name, err)
		}
	}
	sum := sha256.Sum256(data)
	if uint64(len(data)) != info.Size || info.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(sum[:]) {
		return nil, nil, fmt.Errorf("%w: %s: digest or size mismatch", ErrBadSnapshot, name)
	}
	return data, info, nil
}

// maxSnapshotObject bounds what getObject reads into memory.
const maxSnapshotObject = 4 << 30

func (b *Backend) loadSnapshotOnce(ctx context.Context, id string) (*loadedSnapshot, error) {
	head, _, err := b.head(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNoSnapshot
	}
	if err != nil {
		return nil, err
	}
	skel, info, err := b.getObject(ctx, head.Object+".skel")
	if err != nil {
		return nil, err
	}
	md := info.Metadata
	if md[metaVersion] != strconv.Itoa(snapshotVersion) {
		return nil, fmt.Errorf("%w: version %q", ErrBadSnapshot, md[metaVersion])
	}
	seq, err1 := strconv.ParseUint(md[metaSeq], 10, 64)
	epoch, err2 := strconv.ParseUint(md[metaEpoch], 10, 64)
	entries, err3 := strconv.Atoi(md[metaEntries])
	if err := errors.Join(err1, err2, err3); err != nil || epoch == 0 || seq < epoch {
		return nil, fmt.Errorf("%w: metadata %v", ErrBadSnapshot, md)
	}
	// getObject checked the bytes against the object's SHA-256 digest:
	// the metadata's checksum must be that digest (one pass over a
	// skeleton of megabytes, not two).
	if want, err := hex.DecodeString(md[metaSHA]); err != nil || info.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(want) {
		return nil, fmt.Errorf("%w: skeleton checksum mismatch", ErrBadSnapshot)
	}
	var doc skeletonDoc
	if err := msgpack.Unmarshal(skel, &doc); err != nil {
		return nil, fmt.Errorf("%w: skeleton: %w", ErrBadSnapshot, err)
	}
	sk, err := doc.unpack()
	if err != nil {
		return nil, err
	}
	h, err := codec.DecodeHeader(doc.Header)
	if err != nil || h.ID != id || len(sk.IDs) != entries {
		return nil, fmt.Errorf("%w: skeleton of %q with %d entries, metadata says %q with %d (%v)", ErrBadSnapshot, hID(h), len(sk.IDs), id, entries, err)
	}
	t, err := session.NewPartialTree(*h, sk)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	// A snapshot of an earlier session of the same id (deleted, created
	// again) must not be used: its epoch names a header that is gone.
	msg, err := b.stream.GetMsg(ctx, epoch)
	if err != nil || msg.Subject != b.cfg.headerSubject(id) {
		return nil, fmt.Errorf("%w: taken of an earlier session %s (epoch %d)", ErrBadSnapshot, id, epoch)
	}
	ls := &loadedSnapshot{tree: t, epoch: epoch, seq: seq, index: bodyIndexOf(&doc, len(sk.IDs))}
	bodyName, bodySHA := head.Object+".body", md[metaBodySHA]
	body := func(ctx context.Context) ([]*session.Entry, error) {
		data, _, err := b.getObject(ctx, bodyName)
		if err != nil {
			return nil, err
		}
		if shaHex(data) != bodySHA {
			return nil, fmt.Errorf("%w: body checksum mismatch", ErrBadSnapshot)
		}
		ld, err := codec.DecodeFile(data, "snapshot "+id, codec.Strict, codec.WithRunner(parallel.Lines))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
		}
		return ld.Tree.Entries()
	}
	ls.body = body
	return ls, nil
}

func hID(h *session.Header) string {
	if h == nil {
		return ""
	}
	return h.ID
}
