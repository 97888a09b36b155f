package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/telemetry"
)

// SnapshotVersion is the snapshot format this version writes and reads.
// A snapshot of another version is ignored (the session is rebuilt).
const SnapshotVersion = 2

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

// skeletonDoc is the skeleton object's content. The per-entry columns are
// packed (ids in one string, varint parents, a byte per type) so that a
// 100k-entry skeleton decodes with a handful of allocations.
type skeletonDoc struct {
	Header   []byte           `msgpack:"header"` // pi JSON of the header
	IDs      string           `msgpack:"ids"`    // every id, concatenated
	IDLens   []byte           `msgpack:"idlens"` // uvarint length of each
	Parents  []byte           `msgpack:"parents"`
	TypeDict []string         `msgpack:"typedict"`
	Types    []byte           `msgpack:"types"`  // index into TypeDict
	Sorted   []byte           `msgpack:"sorted"` // uvarint positions in id order
	Rest     session.Skeleton `msgpack:"rest"`   // the state, columns empty
}

func packSkeleton(h []byte, sk session.Skeleton) (*skeletonDoc, error) {
	d := &skeletonDoc{Header: h, Rest: sk}
	d.Rest.IDs, d.Rest.Parents, d.Rest.Types, d.Rest.Sorted = nil, nil, nil, nil
	for _, i := range sk.Sorted {
		d.Sorted = binary.AppendUvarint(d.Sorted, uint64(i))
	}
	var ids strings.Builder
	dict := map[session.EntryType]byte{}
	for i, id := range sk.IDs {
		ids.WriteString(id)
		d.IDLens = binary.AppendUvarint(d.IDLens, uint64(len(id)))
		d.Parents = binary.AppendUvarint(d.Parents, uint64(sk.Parents[i]+1))
		code, ok := dict[sk.Types[i]]
		if !ok {
			if len(d.TypeDict) == 256 {
				return nil, fmt.Errorf("stream: more than 256 entry types in one session")
			}
			code = byte(len(d.TypeDict))
			dict[sk.Types[i]] = code
			d.TypeDict = append(d.TypeDict, string(sk.Types[i]))
		}
		d.Types = append(d.Types, code)
	}
	d.IDs = ids.String()
	return d, nil
}

func (d *skeletonDoc) unpack() (session.Skeleton, error) {
	sk := d.Rest
	n := len(d.Types)
	sk.IDs, sk.Parents, sk.Types = make([]string, n), make([]int32, n), make([]session.EntryType, n)
	dict := make([]session.EntryType, len(d.TypeDict))
	for i, t := range d.TypeDict {
		dict[i] = session.EntryType(t)
	}
	ids, lens, parents := d.IDs, d.IDLens, d.Parents
	for i := range n {
		l, k := binary.Uvarint(lens)
		p, m := binary.Uvarint(parents)
		if k <= 0 || m <= 0 || l > uint64(len(ids)) || int(d.Types[i]) >= len(dict) || p > uint64(i) {
			return sk, fmt.Errorf("%w: skeleton column %d is damaged", ErrBadSnapshot, i)
		}
		sk.IDs[i], ids, lens = ids[:l], ids[l:], lens[k:]
		sk.Parents[i], parents = int32(p)-1, parents[m:]
		sk.Types[i] = dict[d.Types[i]]
	}
	sk.Sorted = make([]int32, 0, n)
	for rest := d.Sorted; len(rest) > 0; {
		v, k := binary.Uvarint(rest)
		if k <= 0 || v >= uint64(n) {
			return sk, fmt.Errorf("%w: skeleton sort column is damaged", ErrBadSnapshot)
		}
		sk.Sorted, rest = append(sk.Sorted, int32(v)), rest[k:]
	}
	if len(ids) != 0 || len(lens) != 0 || len(parents) != 0 || len(sk.Sorted) != n {
		return sk, fmt.Errorf("%w: skeleton columns disagree in length", ErrBadSnapshot)
	}
	return sk, nil
}

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

// Snapshot is an encoded snapshot, ready to upload without a lock.
type Snapshot struct {
	ID         string
	Epoch, Seq uint64
	Entries    int
	Skeleton   []byte
	Body       []byte
}

// EncodeSnapshot encodes a snapshot of t, a complete tree covering the
// session of the given epoch up to stream sequence seq. t must not change
// while it runs.
func EncodeSnapshot(t *session.Tree, epoch, seq uint64) (*Snapshot, error) {
	h := t.Header()
	body, err := filestore.Encode(&h, t.Entries())
	if err != nil {
		return nil, err
	}
	hj, err := codec.EncodeHeader(&h)
	if err != nil {
		return nil, err
	}
	doc, err := packSkeleton(hj, t.Skeleton())
	if err != nil {
		return nil, err
	}
	skel, err := msgpack.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("stream: encode skeleton: %w", err)
	}
	return &Snapshot{ID: h.ID, Epoch: epoch, Seq: seq, Entries: t.Len(), Skeleton: skel, Body: body}, nil
}

func shaHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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

// SaveSnapshot uploads a snapshot and makes it the session's current one,
// unless a newer one is current already.
func (b *Backend) SaveSnapshot(ctx context.Context, snap *Snapshot) (err error) {
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
	if _, err := b.snaps.PutBytes(ctx, name+".body", snap.Body); err != nil {
		return fmt.Errorf("stream: snapshot %s: %w", id, err)
	}
	meta := jetstream.ObjectMeta{
		Name: name + ".skel",
		Metadata: map[string]string{
			metaVersion: strconv.Itoa(SnapshotVersion),
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
	for _, obj := range []string{name + ".skel", name + ".body"} {
		if err := b.snaps.Delete(ctx, obj); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return err
		}
	}
	return nil
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
		if err := b.deleteSnapshot(ctx, name); err != nil {
			return err
		}
	}
	if err := b.heads.Delete(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	return nil
}

// loadedSnapshot is a snapshot's skeleton, read and checked, and how to
// get its entries.
type loadedSnapshot struct {
	tree       *session.Tree // partial
	epoch, seq uint64
	body       func(ctx context.Context) ([]*session.Entry, error)
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
	stream, subject := "OBJ_"+b.cfg.SnapshotBucket(), "$O."+b.cfg.SnapshotBucket()+".C."+info.NUID
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
	if md[metaVersion] != strconv.Itoa(SnapshotVersion) {
		return nil, fmt.Errorf("%w: version %q", ErrBadSnapshot, md[metaVersion])
	}
	seq, err1 := strconv.ParseUint(md[metaSeq], 10, 64)
	epoch, err2 := strconv.ParseUint(md[metaEpoch], 10, 64)
	entries, err3 := strconv.Atoi(md[metaEntries])
	if err := errors.Join(err1, err2, err3); err != nil || epoch == 0 || seq < epoch {
		return nil, fmt.Errorf("%w: metadata %v", ErrBadSnapshot, md)
	}
	if shaHex(skel) != md[metaSHA] {
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
	bodyName, bodySHA := head.Object+".body", md[metaBodySHA]
	body := func(ctx context.Context) ([]*session.Entry, error) {
		data, _, err := b.getObject(ctx, bodyName)
		if err != nil {
			return nil, err
		}
		if shaHex(data) != bodySHA {
			return nil, fmt.Errorf("%w: body checksum mismatch", ErrBadSnapshot)
		}
		ld, err := filestore.Load(data, "snapshot "+id, filestore.Strict)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
		}
		return ld.Tree.Entries(), nil
	}
	return &loadedSnapshot{tree: t, epoch: epoch, seq: seq, body: body}, nil
}

func hID(h *session.Header) string {
	if h == nil {
		return ""
	}
	return h.ID
}

// opened is a session read from the stream: a tree (partial when it came
// from a snapshot skeleton), its epoch and last sequence, and how to get
// the entries a partial tree lacks.
type opened struct {
	tree        *session.Tree
	epoch, last uint64
	info        OpenInfo
	body        func(ctx context.Context) ([]*session.Entry, error)
}

// openTree loads a session from its snapshot skeleton and the entries
// after it, or, without a usable snapshot, from the whole stream.
func (b *Backend) openTree(ctx context.Context, id string) (*opened, error) {
	start := time.Now()
	var info OpenInfo
	ls, err := b.loadSnapshot(ctx, id)
	if err == nil {
		t := ls.tree
		last, terr := b.read(ctx, id, ls.seq, func(r record) error {
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
			info.FromSnapshot, info.SnapshotSeq, info.Took = true, ls.seq, time.Since(start)
			return &opened{tree: t, epoch: ls.epoch, last: last, info: info, body: ls.body}, nil
		}
		err = terr
	}
	if !errors.Is(err, ErrNoSnapshot) {
		info.Fallback = err
	}
	info.Tail = 0
	t, epoch, last, err := b.loadTree(ctx, id)
	info.Took = time.Since(start)
	if err != nil {
		return nil, err
	}
	return &opened{tree: t, epoch: epoch, last: last, info: info}, nil
}

// complete gives a partial tree its entries: from the snapshot body, or,
// when the body cannot be used, from the stream. It reports why the body
// was not used, if it was not.
func (b *Backend) complete(ctx context.Context, id string, t *session.Tree, body func(context.Context) ([]*session.Entry, error)) (fallback error, err error) {
	if !t.Partial() {
		return nil, nil
	}
	base, err := body(ctx)
	if err == nil {
		if err = t.Complete(base); err == nil {
			return nil, nil
		}
	}
	fallback = err
	full, _, _, err := b.loadTree(ctx, id)
	if err != nil {
		return fallback, err
	}
	n := t.Missing()
	if full.Len() < n {
		return fallback, fmt.Errorf("%w: %s holds %d entries, its snapshot %d", ErrCorrupt, id, full.Len(), n)
	}
	return fallback, t.Complete(full.Entries()[:n])
}
