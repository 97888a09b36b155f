package stream

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
	"github.com/agentcore/sessionlog/telemetry"
)

// Blobs is a deployment's offloaded content (see session.BlobRef): one
// JetStream object store for every partition, each blob an object named
// by its SHA-256, so the same bytes are stored once however many entries
// and sessions name them. Reads go through a cache bounded in bytes.
//
// Collection (CollectBlobs) deletes blobs no entry names once they are
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
// not reach it) or, holding only the reference, reports ErrBlobNotFound.
// An append that touched before collection looked published before the
// grace period ran out, so collection's read of the entries finds it.
type Blobs struct {
	b      *Backend // the deployment's first partition: connection and requests
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
	// beforeTouch and beforeDelete, set by tests only, run between
	// reading a blob's meta and writing it (an append's touch, a
	// collection's delete marker).
	beforeTouch  func(name string)
	beforeDelete func(name string)
}

// Errors of blobs.
var (
	// ErrBlobNotFound is a reference to a blob the deployment does not
	// hold (never uploaded, or collected).
	ErrBlobNotFound = errors.New("stream: blob not found")
	// ErrBlobMismatch is content that does not match its reference: a
	// blob of another size or hash.
	ErrBlobMismatch = errors.New("stream: blob does not match its reference")
)

// blobChunk is the object store's chunk size for blobs: a few chunks for
// a screenshot, few messages for a large upload.
const blobChunk = 256 << 10

// freshCap bounds how many blobs' freshness a process remembers.
const freshCap = 1 << 16

// BlobBucket names the deployment's object store of blobs.
func (c Config) BlobBucket() string { return c.Stream + "_BLOBS" }

// graceKey is the bucket metadata recording the grace period.
const graceKey = "sessionlog.grace"

func openBlobs(ctx context.Context, b *Backend, cfg Config) (*Blobs, error) {
	obs, err := ensureObjectStore(ctx, b.js, jetstream.ObjectStoreConfig{
		Bucket:      cfg.BlobBucket(),
		Description: "sessionlog blobs: offloaded content by SHA-256",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Metadata:    map[string]string{graceKey: cfg.BlobGrace.String()},
	})
	if err != nil {
		return nil, fmt.Errorf("stream: provision blobs %s: %w", cfg.BlobBucket(), err)
	}
	// The store exists (found or made just now), but in a cluster still
	// settling this node may not see its stream yet: ask again a little
	// later rather than fail the start (a three-node start met this).
	var stream jetstream.Stream
	err = Provisioning(ctx, func(ctx context.Context) (err error) {
		stream, err = b.js.Stream(ctx, objStream(cfg.BlobBucket()))
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return errors.Join(err, errUnavailable) // transient here
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stream: blobs %s: %w", cfg.BlobBucket(), err)
	}
	grace := cfg.BlobGrace
	if st, err := obs.Status(ctx); err == nil {
		if d, err := time.ParseDuration(st.Metadata()[graceKey]); err == nil && d > 0 {
			grace = d // the deployment's, whatever this client was given
		}
	}
	return &Blobs{b: b, obs: obs, stream: stream, bucket: cfg.BlobBucket(), grace: grace, now: time.Now,
		cache: lru.New[string, []byte](), max: cfg.BlobCacheBytes, fresh: lru.New[string, time.Time]()}, nil
}

// Grace is the deployment's grace period: how long an unreferenced blob
// is kept.
func (bl *Blobs) Grace() time.Duration { return bl.grace }

func (bl *Blobs) metaSubject(name string) string {
	return objMeta(bl.bucket, name)
}

func (bl *Blobs) streamName() string { return objStream(bl.bucket) }

// blobMeta is a blob's meta message as the stream's leader has it.
type blobMeta struct {
	info jetstream.ObjectInfo
	data []byte
	seq  uint64
	at   time.Time // server time of the meta's write
}

// meta reads a blob's meta from the stream's leader (a replica may not
// have a touch yet); nil when the blob was never stored.
func (bl *Blobs) meta(ctx context.Context, name string) (*blobMeta, error) {
	m, err := bl.b.lastOf(ctx, bl.streamName(), bl.metaSubject(name))
	if err != nil || m == nil {
		return nil, err
	}
	bm := &blobMeta{data: m.Data, seq: m.Sequence}
	if err := json.Unmarshal(m.Data, &bm.info); err != nil {
		return nil, fmt.Errorf("stream: blob %s: meta: %w", name, err)
	}
	bm.at, err = time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("stream: blob %s: meta time: %w", name, err)
	}
	return bm, nil
}

// writeMeta publishes a blob's meta (a touch, or a delete marker) if the
// meta is still the one at seq.
func (bl *Blobs) writeMeta(ctx context.Context, name string, seq uint64, data []byte) error {
	m := nats.NewMsg(bl.metaSubject(name))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = data
	_, err := bl.b.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(seq, bl.metaSubject(name)))
	return err
}

// count records a blob op (and its bytes, for put and get).
func (bl *Blobs) count(ctx context.Context, op string, bytes int64) {
	tel, attrs := bl.b.tel, metric.WithAttributes(telemetry.BlobOpKey.String(op))
	tel.Blobs.Add(ctx, 1, attrs)
	if bytes > 0 {
		tel.BlobBytes.Add(ctx, bytes, attrs)
	}
}

// remember notes that name may be named without looking until fresh.
func (bl *Blobs) remember(name string, until time.Time) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	bl.fresh.Put(name, until)
	if bl.fresh.Len() > freshCap {
		bl.fresh.Trim(freshCap*3/4, nil)
	}
}

func (bl *Blobs) isFresh(name string) bool {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	until, ok := bl.fresh.Get(name)
	return ok && bl.now().Before(until)
}

func (bl *Blobs) forget(name string) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	bl.fresh.Remove(name)
}

// Ensure makes sure ref's blob is stored and will outlive an append that
// names it now: content, when given, is put if the blob is missing; a
// reference alone to a missing blob is ErrBlobNotFound.
func (bl *Blobs) Ensure(ctx context.Context, ref session.BlobRef, content []byte) error {
	if content != nil && int64(len(content)) != ref.Size {
		return fmt.Errorf("%w: %s is %d bytes, not %d", ErrBlobMismatch, ref.SHA256, len(content), ref.Size)
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
func (bl *Blobs) EnsureFrom(ctx context.Context, ref session.BlobRef, open func() (io.Reader, error)) error {
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
				return fmt.Errorf("%w: %s (upload it before naming it)", ErrBlobNotFound, name)
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
			return fmt.Errorf("%w: %s is stored with %d bytes, the reference says %d", ErrBlobMismatch, name, m.info.Size, ref.Size)
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
		if !isWrongLastSeq(err) || attempt >= 5 {
			return fmt.Errorf("stream: blob %s: touch: %w", name, err)
		}
		// Touched or deleted meanwhile: look again.
	}
}

// Put stores content (if not stored yet) and returns its reference.
func (bl *Blobs) Put(ctx context.Context, content []byte) (session.BlobRef, error) {
	ref := session.NewBlobRef(content, session.BlobJSON)
	return ref, bl.Ensure(ctx, ref, content)
}

func (bl *Blobs) put(ctx context.Context, name string, content io.Reader) error {
	_, err := bl.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: blobChunk}}, content)
	if err != nil {
		return fmt.Errorf("stream: put blob %s: %w", name, err)
	}
	return nil
}

// Get returns the content ref stands for (see session.BlobFetch: the
// blob's bytes, or their base64 text for a base64 reference), from the
// cache when it is there. The bytes are shared: callers must not modify
// them.
func (bl *Blobs) Get(ctx context.Context, ref session.BlobRef) ([]byte, error) {
	key := ref.SHA256
	if ref.Encoding == session.BlobBase64 {
		key += ":base64" // cached as the text it resolves to
	}
	bl.mu.Lock()
	b, ok := bl.cache.Get(key)
	bl.mu.Unlock()
	if ok {
		bl.count(ctx, "hit", 0)
		return b, nil
	}
	v, err, _ := bl.flight.Do(key, func() (any, error) { return bl.fetch(ctx, ref, key) })
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

func (bl *Blobs) fetch(ctx context.Context, ref session.BlobRef, key string) ([]byte, error) {
	name := ref.SHA256
	b, err := bl.obs.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrBlobNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("stream: get blob %s: %w", name, err)
	}
	if int64(len(b)) != ref.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, the reference says %d", ErrBlobMismatch, name, len(b), ref.Size)
	}
	bl.count(ctx, "get", int64(len(b)))
	b = session.BlobContent(ref, b)
	bl.fetches.Add(1)
	if int64(len(b)) <= bl.max/4 {
		bl.mu.Lock()
		if _, ok := bl.cache.Peek(key); !ok {
			bl.cache.Put(key, b)
			bl.cached += int64(len(b))
			bl.cache.TrimWhile(func() bool { return bl.cached > bl.max }, nil, func(_ string, v []byte) { bl.cached -= int64(len(v)) })
		}
		bl.mu.Unlock()
	}
	return b, nil
}

// Cached is how many bytes of blobs the cache holds.
func (bl *Blobs) Cached() int64 {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	return bl.cached
}

// fetcher is session.BlobFetch over ctx.
func (bl *Blobs) fetcher(ctx context.Context) session.BlobFetch {
	return func(ref session.BlobRef) ([]byte, error) { return bl.Get(ctx, ref) }
}

// Fetcher returns a session.BlobFetch for resolving refs in one pass: a
// blob named more than once among them is read once, whatever the cache
// keeps, and held only until its last use. It is safe for concurrent use.
func (bl *Blobs) Fetcher(ctx context.Context, refs []session.BlobRef) session.BlobFetch {
	var mu sync.Mutex
	type key struct{ name, enc string }
	uses := map[key]int{}
	for _, r := range refs {
		uses[key{r.SHA256, r.Encoding}]++
	}
	held := map[key][]byte{}
	return func(ref session.BlobRef) ([]byte, error) {
		k := key{ref.SHA256, ref.Encoding}
		mu.Lock()
		b, ok := held[k]
		mu.Unlock()
		if !ok {
			var err error
			if b, err = bl.Get(ctx, ref); err != nil {
				return nil, err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		switch n := uses[k]; {
		case n > 1:
			held[k] = b
			uses[k] = n - 1
		default:
			delete(held, k)
			delete(uses, k)
		}
		return b, nil
	}
}

// resolvers is how many messages are resolved at once: fetches are
// round trips, worth overlapping beyond the cores.
const resolvers = 8

// ResolveMessagePtrs replaces each message holding references by a copy
// with their content, resolving several at once.
func (bl *Blobs) ResolveMessagePtrs(ctx context.Context, msgs []*session.Message) error {
	var refs []session.BlobRef
	var todo []int
	for i, m := range msgs {
		if r := session.MessageBlobRefs(m); len(r) > 0 {
			refs = append(refs, r...)
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	get := bl.Fetcher(ctx, refs)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, resolvers)
	for w := range min(resolvers, len(todo)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(todo) || errs[w] != nil || ctx.Err() != nil {
					return
				}
				i := todo[k]
				r, err := session.ResolveMessage(msgs[i], get)
				if err != nil {
					errs[w] = fmt.Errorf("stream: resolve message %d: %w", i, err)
					return
				}
				msgs[i] = r
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// Resolve returns e with its references replaced by their content.
func (bl *Blobs) Resolve(ctx context.Context, e *session.Entry) (*session.Entry, error) {
	return session.ResolveEntry(e, bl.fetcher(ctx))
}

// ResolveAll is Resolve for each entry; the slice is changed in place.
func (bl *Blobs) ResolveAll(ctx context.Context, entries []*session.Entry) ([]*session.Entry, error) {
	var refs []session.BlobRef
	for _, e := range entries {
		refs = append(refs, e.BlobRefs()...)
	}
	if len(refs) == 0 {
		return entries, nil
	}
	get := bl.Fetcher(ctx, refs)
	for i, e := range entries {
		r, err := session.ResolveEntry(e, get)
		if err != nil {
			return nil, fmt.Errorf("stream: resolve entry %s: %w", e.ID, err)
		}
		entries[i] = r
	}
	return entries, nil
}

// offload returns entries with every member of at least threshold bytes
// stored apart (entries are not modified). The blobs they name are
// ensured by the append right before each publish (ensureNamed).
func (bl *Blobs) offload(ctx context.Context, entries []*session.Entry, threshold int) ([]*session.Entry, error) {
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

// ensureNamed ensures every blob entries name, and returns the names
// each entry's blobsHeader lists ("" for none; nil when none names any).
func (bl *Blobs) ensureNamed(ctx context.Context, entries []*session.Entry) ([]string, error) {
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

// blobsHeader lists, on a stored entry, the blobs it names, so that
// collection finds every reference reading headers only.
const blobsHeader = "Sessionlog-Blobs"

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
func (bl *Blobs) Usage(ctx context.Context) (uint64, error) {
	st, err := bl.obs.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream: blob store status: %w", err)
	}
	return st.Size(), nil
}

// BlobPiece is a run of a blob's bytes, read in pieces by a client that
// cannot take it whole (a service reply, an HTTP response written as it
// is read).
type BlobPiece struct {
	Data []byte
	Size int64 // the whole blob's
	// Next is where the following piece starts (an opaque position in
	// the object store), 0 after the last.
	Next uint64
}

// errPieceFull stops a batch once a piece holds what it may.
var errPieceFull = errors.New("piece full")

// ReadPiece reads up to limit bytes of blob name (at least one chunk of
// the object store's) from position from (0: its start).
func (bl *Blobs) ReadPiece(ctx context.Context, name string, from uint64, limit int) (BlobPiece, error) {
	m, err := bl.meta(ctx, name)
	if err != nil {
		return BlobPiece{}, err
	}
	if m == nil || m.info.Deleted {
		return BlobPiece{}, fmt.Errorf("%w: %s", ErrBlobNotFound, name)
	}
	p := BlobPiece{Size: int64(m.info.Size)}
	if m.info.Size == 0 {
		return p, nil
	}
	subject := objChunks(bl.bucket, m.info.NUID)
	from = max(from, 1)
	for {
		// The server sends no more than the piece can take.
		end, err := bl.b.getBatchMax(ctx, bl.streamName(), subject, from, max(1, limit-len(p.Data)), func(c *jetstream.RawStreamMsg, _ uint64) error {
			if len(p.Data) > 0 && len(p.Data)+len(c.Data) > limit {
				p.Next = c.Sequence
				return errPieceFull
			}
			p.Data = append(p.Data, c.Data...)
			from = c.Sequence + 1
			return nil
		})
		switch {
		case errors.Is(err, errPieceFull):
			return p, nil
		case errors.Is(err, errNoMessages):
			return p, nil
		case err != nil:
			return BlobPiece{}, fmt.Errorf("stream: read blob %s: %w", name, err)
		case end.pending == 0:
			return p, nil
		}
	}
}
