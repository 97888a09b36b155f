package snapshots

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/agentcore/sessionlog/stream/internal/jsx"
	"github.com/agentcore/sessionlog/telemetry"
)

// Store is one partition's snapshots: their objects and the head record
// of each session's current one.
type Store struct {
	rq      *jsx.Requester
	objs    jetstream.ObjectStore
	heads   jetstream.KeyValue // session id -> its current snapshot object
	bucket  string
	stream  string // the partition's, named in telemetry
	timeout time.Duration
	tel     *telemetry.T
	// memos remembers sessions' last snapshots, to build the next on.
	memos segMemos
	// checkEpoch reports a session whose header is not at epoch any more.
	checkEpoch func(ctx context.Context, id string, epoch uint64) error
	beforeHead func(id string) // see Hooks
}

// Config is where a partition keeps its snapshots.
type Config struct {
	// Bucket names the object store (made if missing); the heads are
	// in the key-value bucket Bucket_HEADS.
	Bucket string
	// Stream is the partition's stream, named in telemetry.
	Stream string
	// Replicas of the buckets made here.
	Replicas int
	// RequestTimeout bounds a save or a load without a deadline of its
	// own.
	RequestTimeout time.Duration
	// CheckEpoch reports, as ErrUnusable, a session whose header is not
	// at epoch any more: a snapshot taken of an earlier session of the
	// same id.
	CheckEpoch func(ctx context.Context, id string, epoch uint64) error
}

// Open opens (or makes) the buckets of cfg.
func Open(ctx context.Context, rq *jsx.Requester, tel *telemetry.T, cfg Config) (*Store, error) {
	objs, err := jsx.EnsureObjectStore(ctx, rq.JS, jetstream.ObjectStoreConfig{
		Bucket:      cfg.Bucket,
		Description: "sessionlog snapshots",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("snapshots: provision %s: %w", cfg.Bucket, err)
	}
	heads, err := jsx.EnsureKV(ctx, rq.JS, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket + "_HEADS",
		Description: "sessionlog: current snapshot of each session",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		History:     1,
	})
	if err != nil {
		return nil, fmt.Errorf("snapshots: provision heads: %w", err)
	}
	return &Store{rq: rq, objs: objs, heads: heads, bucket: cfg.Bucket, stream: cfg.Stream,
		timeout: cfg.RequestTimeout, tel: tel, checkEpoch: cfg.CheckEpoch}, nil
}

func (sn *Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return jsx.WithTimeout(ctx, sn.timeout)
}

// Version is the snapshot format this sessionlog writes. A snapshot of a
// version it does not read is ignored (the session is rebuilt from its
// messages), never rewritten.
const Version = 3

// OldestVersion is the oldest snapshot format read (its body is one
// object).
const OldestVersion = 2

var (
	// ErrNotFound is reported when a session has no snapshot.
	ErrNotFound = errors.New("snapshots: no snapshot")
	// ErrUnusable is reported for a snapshot that cannot be trusted:
	// another format version, a checksum or metadata mismatch, a body that
	// does not load, or one taken of an earlier session of the same id.
	ErrUnusable = errors.New("snapshots: unusable snapshot")
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
// under it): each is a new pair "<id>-<epoch>-<seq>-<nuid>.skel/.body"
// (and ".tip" when the leaf's context is a small part of the session: see
// open_tip.go), and a head
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

// Head is a session's current snapshot, the one before it, and
// the body segments of each (heads written before segments have none:
// their bodies are "<object>.body").
type Head struct {
	Object   string   `json:"object"`
	Prev     string   `json:"prev,omitempty"`
	Seq      uint64   `json:"seq"`
	Epoch    uint64   `json:"epoch"`
	Segs     []string `json:"segs,omitempty"`
	PrevSegs []string `json:"prevSegs,omitempty"`
	// Tip is set when the snapshot has a tip, "<object>.tip": its leaf's
	// context branch, header first, as pi JSONL lines (see openFromTip).
	Tip bool `json:"tip,omitempty"`
	// Origin is the node every entry of a session with a tip was written
	// on, where named (see Config.Origin).
	Origin string `json:"origin,omitempty"`
}

// Segments are the body objects of the current snapshot, and prevSegsOf
// those of the one before.
func (h Head) Segments() []string     { return bodyObjects(h.Object, h.Segs) }
func (h Head) PrevSegments() []string { return bodyObjects(h.Prev, h.PrevSegs) }

func bodyObjects(snapshot string, segs []string) []string {
	if segs == nil && snapshot != "" {
		return []string{snapshot + ".body"}
	}
	return segs
}

func (sn *Store) head(ctx context.Context, id string) (Head, uint64, error) {
	e, err := sn.heads.Get(ctx, id)
	if err != nil {
		return Head{}, 0, err
	}
	h, err := parseHead(e.Value())
	return h, e.Revision(), err
}

// parseHead reads a head record: ErrUnusable when it is not one.
func parseHead(val []byte) (Head, error) {
	var h Head
	if err := json.Unmarshal(val, &h); err != nil {
		return Head{}, fmt.Errorf("%w: head: %w", ErrUnusable, err)
	}
	return h, nil
}

// errHeadMoved is a snapshot built on segments of a snapshot that another
// writer replaced meanwhile: they may be deleted, so it is written whole.
var errHeadMoved = errors.New("snapshots: snapshot head moved")

// Save encodes and uploads the snapshot src holds and makes it
// the session's current one, unless a newer one is current already. It
// builds on the session's snapshot before when this backend read or wrote
// it, and that one is still current.
func (sn *Store) Save(ctx context.Context, src *Source) (err error) {
	id, epoch, seq := src.header.ID, src.epoch, src.seq
	ctx, end := sn.traceSnapshot(ctx, "write", id)
	defer func() { end(err) }()
	ctx, cancel := sn.withTimeout(ctx)
	defer cancel()
	h, _, herr := sn.head(ctx, id)
	if herr == nil && h.Epoch == epoch && h.Seq >= seq {
		return nil
	}
	var prev []bodySeg
	if m, ok := sn.memos.get(id); ok && herr == nil && m.epoch == epoch && m.object == h.Object {
		prev = m.segs
	}
	snap, err := src.encode(prev)
	if err != nil {
		return err
	}
	err = sn.saveSnapshot(ctx, snap, h.Object)
	if errors.Is(err, errHeadMoved) {
		sn.Forget(id)
		if src.missing > 0 {
			return ErrPartialSource
		}
		if snap, err = src.encode(nil); err == nil {
			err = sn.saveSnapshot(ctx, snap, "")
		}
	}
	return err
}

// saveSnapshot uploads snap; if it keeps segments of another snapshot,
// that one (base) must still be current when the head moves to snap.
func (sn *Store) saveSnapshot(ctx context.Context, snap *encodedSnapshot, base string) error {
	id, epoch, seq := snap.id, snap.epoch, snap.seq
	newer := func(h Head) bool { return h.Epoch == epoch && h.Seq >= seq }
	// Unique per write: two writers snapshotting the same sequence must
	// not replace each other's objects, nor delete the one the head names.
	name := fmt.Sprintf("%s-%d-%d-%s", id, epoch, seq, nuid.Next())
	// What this save wrote goes again unless a head may name it: on every
	// return but a head written or one whose outcome is unknown (then
	// Collect deletes them if it was not), even when ctx is done — a node
	// stopping mid-save must not leave them behind.
	var mine []string // the new objects
	headMayNameThem := false
	defer func() {
		if !headMayNameThem && len(mine) > 0 {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sn.timeout)
			defer cancel()
			sn.deleteObjects(cctx, mine...)
		}
	}()
	// The body first: a skeleton is only ever found once its body exists.
	// The skeleton then says where the body's chunks are.
	// encode made doc and its segment list for this write alone: the new
	// segment is filled in place, the kept ones are never changed.
	doc := snap.doc
	for at, end := snap.freshFrom, snap.freshFrom+len(snap.fresh); at < end; {
		data, seg, err := encodeSegment(snap.fresh[at-snap.freshFrom:], at, maxSegmentBytes)
		if err != nil {
			return err
		}
		obj := name + ".body"
		if n := len(mine); n > 0 { // mine holds the bodies so far
			obj += "." + strconv.Itoa(n)
		}
		mine = append(mine, obj) // a put that fails may have stored it
		nuid, seqs, err := sn.putBody(ctx, obj, data)
		if err != nil {
			return err
		}
		seg.stored(obj, nuid, data, seqs)
		doc.Segs = append(doc.Segs, seg)
		at += seg.Count
	}
	if snap.tip != nil {
		mine = append(mine, name+".tip")
		if _, err := sn.objs.PutBytes(ctx, name+".tip", snap.tip); err != nil {
			return fmt.Errorf("snapshots: snapshot %s: %w", id, err)
		}
	}
	skel, err := msgpack.Marshal(doc)
	if err != nil {
		return fmt.Errorf("snapshots: encode skeleton: %w", err)
	}
	meta := jetstream.ObjectMeta{
		Name: name + ".skel",
		Metadata: map[string]string{
			metaVersion: strconv.Itoa(Version),
			metaSeq:     strconv.FormatUint(seq, 10),
			metaEpoch:   strconv.FormatUint(epoch, 10),
			metaEntries: strconv.Itoa(snap.entries),
			metaSHA:     shaHex(skel),
			metaBodySHA: segsDigest(doc.Segs),
		},
	}
	mine = append(mine, name+".skel")
	if _, err := sn.objs.Put(ctx, meta, bytes.NewReader(skel)); err != nil {
		return fmt.Errorf("snapshots: snapshot %s: %w", id, err)
	}
	segs := segObjects(doc.Segs)
	for range 8 {
		if sn.beforeHead != nil {
			sn.beforeHead(id)
		}
		cur, rev, err := sn.head(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			cur, rev = Head{}, 0
		case err != nil && !errors.Is(err, ErrUnusable):
			return fmt.Errorf("snapshots: snapshot head %s: %w", id, err)
		case err == nil && newer(cur):
			return nil // lost the race to another as new
		}
		if snap.reused && cur.Object != base {
			return errHeadMoved
		}
		val, _ := json.Marshal(Head{Object: name, Prev: cur.Object, Seq: seq, Epoch: epoch, Segs: segs, PrevSegs: cur.Segments(), Tip: snap.tip != nil, Origin: snap.origin})
		if rev == 0 {
			_, err = sn.heads.Create(ctx, id, val)
		} else {
			_, err = sn.heads.Update(ctx, id, val, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		headMayNameThem = true
		if err != nil {
			return fmt.Errorf("snapshots: snapshot head %s: %w", id, err)
		}
		sn.memos.put(id, segMemo{epoch: epoch, object: name, segs: doc.Segs})
		if cur.Prev != "" && cur.Prev != name && cur.Prev != cur.Object {
			// The one before the one before goes, with the segments
			// neither of the two kept lists (best effort: what is left
			// is Collect's).
			sn.deleteObjects(ctx, append([]string{cur.Prev + ".skel", cur.Prev + ".tip"}, without(cur.PrevSegments(), cur.Segments(), segs)...)...)
		}
		return nil
	}
	return fmt.Errorf("snapshots: snapshot head %s: too much contention", id)
}

// without is names less those in any of the others.
func without(names []string, others ...[]string) []string {
	var out []string
next:
	for _, n := range names {
		for _, o := range others {
			if slices.Contains(o, n) {
				continue next
			}
		}
		out = append(out, n)
	}
	return out
}

// deleteObjects deletes objects of the snapshots' store, best effort,
// and says how many there were.
func (sn *Store) deleteObjects(ctx context.Context, names ...string) (int, error) {
	n := 0
	var first error
	for _, obj := range names {
		err := sn.objs.Delete(ctx, obj)
		switch {
		case errors.Is(err, jetstream.ErrObjectNotFound):
		case err != nil:
			first = cmp.Or(first, err)
		default:
			n++
		}
	}
	return n, first
}

// Delete removes a session's snapshots and its head, and says
// how many objects went.
func (sn *Store) Delete(ctx context.Context, id string) (int, error) {
	sn.Forget(id)
	h, _, err := sn.head(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var names []string
	for _, s := range []string{h.Object, h.Prev} {
		if s != "" {
			names = append(names, s+".skel", s+".body", s+".tip")
		}
	}
	names = append(names, without(h.Segments(), names)...)
	names = append(names, without(h.PrevSegments(), names)...)
	n, err := sn.deleteObjects(ctx, names...)
	if err != nil {
		return n, err
	}
	if err := sn.heads.Purge(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return n, err
	}
	return n, nil
}

// Current reads the head of the session's current snapshot: ErrNotFound
// when there is none.
func (sn *Store) Current(ctx context.Context, id string) (Head, error) {
	h, _, err := sn.head(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return h, ErrNotFound
	}
	return h, err
}
