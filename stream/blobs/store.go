package blobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
	"golang.org/x/sync/singleflight"

	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
	"github.com/agentcore/sessionlog/telemetry"
)

// Store is a deployment's offloaded content (see session.BlobRef): one
// JetStream object store for every partition, each blob an object named
// by its SHA-256, so the same bytes are stored once however many entries
// and sessions name them. Reads go through a cache bounded in bytes.
//
// Collection (Collect) deletes blobs no entry names once they are
// older than the bucket's grace period. What keeps it from deleting a
// blob an append is about to name is the object's meta message, the one
// record both sides write conditionally:
//   - an append makes sure, before it publishes, that each blob it names
//     exists and that its meta was written less than half the grace
//     period ago, rewriting the meta (a "touch", conditional on the
//     meta's last sequence) when it is older; it publishes within the
//     other half;
//   - collection considers only blobs whose meta is older than the grace
//     period, then reads every entry, then deletes each blob no entry
//     names by writing its delete marker conditional on the meta's
//     sequence it saw.
//
// A touch after collection looked makes the delete fail; a delete before
// the touch makes the touch fail, and the append puts the blob again
// (under a new object id, so the delete's purge of the old chunks does
// not reach it) or, holding only the reference, reports ErrNotFound.
// An append that touched before collection looked published before the
// grace period ran out, so collection's read of the entries finds it.
type Store struct {
	rq     *jsx.Requester // the deployment's first partition's
	tel    *telemetry.T
	obs    jetstream.ObjectStore
	stream jetstream.Stream // the object store's, for what its client does not do
	bucket string
	grace  time.Duration
	now    func() time.Time

	mu     sync.Mutex
	cache  *lru.Cache[string, []byte]
	cached int64
	max    int64
	// fresh is, for blobs this process put or touched, the time until
	// which an append may name them without looking again.
	fresh  *lru.Cache[string, time.Time]
	flight singleflight.Group
	// fetches counts blobs read from the object store.
	fetches atomic.Int64
	// alt is the node's other store of blobs, if any (an edge's kept on
	// the machine, beside those that sync: see Pair), where
	// a blob missing here is looked for too.
	alt *Store
	// beforeTouch and beforeDelete, set by tests only, run between
	// reading a blob's meta and writing it (an append's touch, a
	// collection's delete marker).
	beforeTouch  func(name string)
	beforeDelete func(name string)
}

// Errors of blobs.
var (
	// ErrNotFound is a reference to a blob the deployment does not
	// hold (never uploaded, or collected).
	ErrNotFound = errors.New("blobs: not found")
	// ErrMismatch is content that does not match its reference: a
	// blob of another size or hash.
	ErrMismatch = errors.New("blobs: content does not match its reference")
)

// blobChunk is the object store's chunk size for blobs: a few chunks for
// a screenshot, few messages for a large upload.
const blobChunk = 256 << 10

// freshCap bounds how many blobs' freshness a process remembers.
const freshCap = 1 << 16

// graceKey is the bucket metadata recording the grace period.
const graceKey = "sessionlog.grace"

// Config is where a Store keeps its blobs and how long it keeps those no
// entry names.
type Config struct {
	// Bucket names the object store (made if missing).
	Bucket string
	// Replicas of a bucket made here.
	Replicas int
	// Grace is how long a blob no entry names is kept, recorded in a
	// bucket made here; an existing bucket's own is used.
	Grace time.Duration
	// CacheBytes bounds the cache of blobs read.
	CacheBytes int64
}

// Open opens (or makes) the store of cfg.Bucket, sending its requests
// through rq.
func Open(ctx context.Context, rq *jsx.Requester, tel *telemetry.T, cfg Config) (*Store, error) {
	bucket := cfg.Bucket
	obs, err := jsx.EnsureObjectStore(ctx, rq.JS, jetstream.ObjectStoreConfig{
		Bucket:      bucket,
		Description: "sessionlog blobs: offloaded content by SHA-256",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Metadata:    map[string]string{graceKey: cfg.Grace.String()},
	})
	if err != nil {
		return nil, fmt.Errorf("blobs: provision %s: %w", bucket, err)
	}
	// The store exists (found or made just now), but in a cluster still
	// settling this node may not see its stream yet: ask again a little
	// later rather than fail the start (a three-node start met this).
	var stream jetstream.Stream
	err = jsx.Provisioning(ctx, func(ctx context.Context) (err error) {
		stream, err = rq.JS.Stream(ctx, jsx.ObjStream(bucket))
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return errors.Join(err, jsx.ErrUnavailable) // transient here
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("blobs: %s: %w", bucket, err)
	}
	grace := cfg.Grace
	if st, err := obs.Status(ctx); err == nil {
		if d, err := time.ParseDuration(st.Metadata()[graceKey]); err == nil && d > 0 {
			grace = d // the deployment's, whatever this client was given
		}
	}
	return &Store{rq: rq, tel: tel, obs: obs, stream: stream, bucket: bucket, grace: grace, now: time.Now,
		cache: lru.New[string, []byte](), max: cfg.CacheBytes, fresh: lru.New[string, time.Time]()}, nil
}

// Pair makes each of a node's two stores (an edge's that syncs and the one
// it keeps on the machine) look in the other for a blob it lacks.
func Pair(shared, local *Store) { shared.alt, local.alt = local, shared }

// Grace is the deployment's grace period: how long an unreferenced blob
// is kept.
func (bl *Store) Grace() time.Duration { return bl.grace }

func (bl *Store) metaSubject(name string) string {
	return jsx.ObjMeta(bl.bucket, name)
}

func (bl *Store) streamName() string { return jsx.ObjStream(bl.bucket) }

// blobMeta is a blob's meta message as the stream's leader has it.
type blobMeta struct {
	info jetstream.ObjectInfo
	data []byte
	seq  uint64
	at   time.Time // server time of the meta's write
}

// meta reads a blob's meta from the stream's leader (a replica may not
// have a touch yet); nil when the blob was never stored.
func (bl *Store) meta(ctx context.Context, name string) (*blobMeta, error) {
	m, err := bl.rq.LastOf(ctx, bl.streamName(), bl.metaSubject(name))
	if err != nil || m == nil {
		return nil, err
	}
	bm := &blobMeta{data: m.Data, seq: m.Sequence}
	if err := json.Unmarshal(m.Data, &bm.info); err != nil {
		return nil, fmt.Errorf("blobs: blob %s: meta: %w", name, err)
	}
	bm.at, err = time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("blobs: blob %s: meta time: %w", name, err)
	}
	return bm, nil
}

// writeMeta publishes a blob's meta (a touch, or a delete marker) if the
// meta is still the one at seq.
func (bl *Store) writeMeta(ctx context.Context, name string, seq uint64, data []byte) error {
	m := nats.NewMsg(bl.metaSubject(name))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = data
	_, err := bl.rq.JS.PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(seq, bl.metaSubject(name)))
	return err
}

// count records a blob op (and its bytes, for put and get).
func (bl *Store) count(ctx context.Context, op string, bytes int64) {
	tel, attrs := bl.tel, metric.WithAttributes(telemetry.BlobOpKey.String(op))
	tel.Blobs.Add(ctx, 1, attrs)
	if bytes > 0 {
		tel.BlobBytes.Add(ctx, bytes, attrs)
	}
}

// remember notes that name may be named without looking until fresh.
func (bl *Store) remember(name string, until time.Time) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	bl.fresh.Put(name, until)
	if bl.fresh.Len() > freshCap {
		bl.fresh.Trim(freshCap*3/4, nil)
	}
}

func (bl *Store) isFresh(name string) bool {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	until, ok := bl.fresh.Get(name)
	return ok && bl.now().Before(until)
}

func (bl *Store) forget(name string) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	bl.fresh.Remove(name)
}

// Ensure makes sure ref's blob is stored and will outlive an append that
// names it now: content, when given, is put if the blob is missing; a
// reference alone to a missing blob is ErrNotFound.
func (bl *Store) Ensure(ctx context.Context, ref session.BlobRef, content []byte) error {
	if content != nil && int64(len(content)) != ref.Size {
		return fmt.Errorf("%w: %s is %d bytes, not %d", ErrMismatch, ref.SHA256, len(content), ref.Size)
	}
	var open func() (io.Reader, error)
	if content != nil {
		open = func() (io.Reader, error) { return bytes.NewReader(content), nil }
	}
	return bl.EnsureFrom(ctx, ref, open)
}

// EnsureFrom is Ensure with the content read from open when it must be
// put (nil: a reference alone). The caller has checked that the content
// is ref's: the object store checks its digest as it reads it back.
func (bl *Store) EnsureFrom(ctx context.Context, ref session.BlobRef, open func() (io.Reader, error)) error {
	if err := ref.Check(); err != nil {
		return fmt.Errorf("%w: %v", session.ErrInvalidEntry, err)
	}
	name := ref.SHA256
	if bl.isFresh(name) {
		return nil
	}
	for attempt := 0; ; attempt++ {
		start := bl.now()
		m, err := bl.meta(ctx, name)
		if err != nil {
			return err
		}
		if m == nil || m.info.Deleted {
			if open == nil {
				// Named here after another node wrote it (a fork, a
				// copy), or held in the node's other store: this store
				// keeps a blob of its own from then.
				open = func() (io.Reader, error) {
					b, err := bl.elsewhere(ctx, ref)
					if errors.Is(err, ErrNotFound) {
						return nil, fmt.Errorf("%w: %s (upload it before naming it)", ErrNotFound, name)
					}
					return bytes.NewReader(b), err
				}
			}
			r, err := open()
			if err != nil {
				return err
			}
			if err := bl.put(ctx, name, r); err != nil {
				return err
			}
			bl.count(ctx, "put", ref.Size)
			bl.remember(name, start.Add(bl.grace/2))
			return nil
		}
		if int64(m.info.Size) != ref.Size {
			return fmt.Errorf("%w: %s is stored with %d bytes, the reference says %d", ErrMismatch, name, m.info.Size, ref.Size)
		}
		if start.Sub(m.at) < bl.grace/2 {
			bl.count(ctx, "exists", 0)
			bl.remember(name, m.at.Add(bl.grace/2))
			return nil
		}
		if bl.beforeTouch != nil {
			bl.beforeTouch(name)
		}
		err = bl.writeMeta(ctx, name, m.seq, m.data)
		if err == nil {
			bl.count(ctx, "touch", 0)
			bl.remember(name, start.Add(bl.grace/2))
			return nil
		}
		if !jsx.IsWrongLastSeq(err) || attempt >= 5 {
			return fmt.Errorf("blobs: blob %s: touch: %w", name, err)
		}
		// Touched or deleted meanwhile: look again.
	}
}

// Put stores content (if not stored yet) and returns its reference.
func (bl *Store) Put(ctx context.Context, content []byte) (session.BlobRef, error) {
	ref := session.NewBlobRef(content, session.BlobJSON)
	return ref, bl.Ensure(ctx, ref, content)
}

func (bl *Store) put(ctx context.Context, name string, content io.Reader) error {
	_, err := bl.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: blobChunk}}, content)
	if err != nil {
		return fmt.Errorf("blobs: put blob %s: %w", name, err)
	}
	return nil
}

// Offload returns entries with every member of at least threshold bytes
// stored apart (entries are not modified). The blobs they name are
// ensured by the append right before each publish (EnsureNamed).
func (bl *Store) Offload(ctx context.Context, entries []*session.Entry, threshold int) ([]*session.Entry, error) {
	out, copied := entries, false
	put := func(ref session.BlobRef, content []byte) error { return bl.Ensure(ctx, ref, content) }
	for i, e := range entries {
		if e == nil {
			continue // refused by the tree's check
		}
		o, err := session.OffloadEntry(e, threshold, put)
		if err != nil {
			return nil, err
		}
		if o != e {
			if !copied {
				out, copied = append([]*session.Entry(nil), entries...), true
			}
			out[i] = o
		}
	}
	return out, nil
}

// EnsureNamed ensures every blob entries name, and returns the names
// each entry's Header lists ("" for none; nil when none names any).
func (bl *Store) EnsureNamed(ctx context.Context, entries []*session.Entry) ([]string, error) {
	var names []string // nil while no entry names a blob
	for i, e := range entries {
		if e == nil {
			continue
		}
		refs := e.BlobRefs()
		for _, ref := range refs {
			if err := bl.Ensure(ctx, ref, nil); err != nil {
				return nil, fmt.Errorf("entry %s: %w", e.ID, err)
			}
		}
		if len(refs) > 0 {
			if names == nil {
				names = make([]string, len(entries))
			}
			names[i] = blobNames(refs)
		}
	}
	return names, nil
}

// Header lists, on a stored entry, the blobs it names, so that
// collection finds every reference reading headers only.
const Header = "Sessionlog-Blobs"

func blobNames(refs []session.BlobRef) string {
	if len(refs) == 0 {
		return ""
	}
	var b []byte
	for i, r := range refs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.SHA256...)
	}
	return string(b)
}

// Usage is how many bytes the blob store holds (chunks and metadata,
// blobs being collected included).
func (bl *Store) Usage(ctx context.Context) (uint64, error) {
	st, err := bl.obs.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("blobs: blob store status: %w", err)
	}
	return st.Size(), nil
}
