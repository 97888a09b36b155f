package blobs

// Reading blobs: through the cache, resolving the references of entries
// and messages, and in pieces for clients that cannot take a blob whole.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// Get returns the content ref stands for (see session.BlobFetch: the
// blob's bytes, or their base64 text for a base64 reference), from the
// cache when it is there. The bytes are shared: callers must not modify
// them.
func (bl *Store) Get(ctx context.Context, ref session.BlobRef) ([]byte, error) {
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

func (bl *Store) fetch(ctx context.Context, ref session.BlobRef, key string) ([]byte, error) {
	name := ref.SHA256
	b, err := bl.obs.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		b, err = bl.elsewhere(ctx, ref)
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrMismatch) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: get blob %s: %w", name, err)
	}
	if int64(len(b)) != ref.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, the reference says %d", ErrMismatch, name, len(b), ref.Size)
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
func (bl *Store) Cached() int64 {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	return bl.cached
}

// fetcher is session.BlobFetch over ctx.
func (bl *Store) fetcher(ctx context.Context) session.BlobFetch {
	return func(ref session.BlobRef) ([]byte, error) { return bl.Get(ctx, ref) }
}

// Fetcher returns a session.BlobFetch for resolving refs in one pass: a
// blob named more than once among them is read once, whatever the cache
// keeps, and held only until its last use. It is safe for concurrent use.
func (bl *Store) Fetcher(ctx context.Context, refs []session.BlobRef) session.BlobFetch {
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
func (bl *Store) ResolveMessagePtrs(ctx context.Context, msgs []*session.Message) error {
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
					errs[w] = fmt.Errorf("blobs: resolve message %d: %w", i, err)
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
func (bl *Store) Resolve(ctx context.Context, e *session.Entry) (*session.Entry, error) {
	return session.ResolveEntry(e, bl.fetcher(ctx))
}

// ResolveAll is Resolve for each entry; the slice is changed in place.
func (bl *Store) ResolveAll(ctx context.Context, entries []*session.Entry) ([]*session.Entry, error) {
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
			return nil, fmt.Errorf("blobs: resolve entry %s: %w", e.ID, err)
		}
		entries[i] = r
	}
	return entries, nil
}

// Piece is a run of a blob's bytes, read in pieces by a client that
// cannot take it whole (a service reply, an HTTP response written as it
// is read).
type Piece struct {
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
func (bl *Store) ReadPiece(ctx context.Context, name string, from uint64, limit int) (Piece, error) {
	size, subject, err := bl.locate(ctx, name)
	if errors.Is(err, ErrNotFound) && bl.alt != nil {
		bl = bl.alt // the node's other store
		size, subject, err = bl.locate(ctx, name)
	}
	if err != nil {
		return Piece{}, err
	}
	p := Piece{Size: size}
	if size == 0 {
		return p, nil
	}
	from = max(from, 1)
	for {
		// The server sends no more than the piece can take.
		end, err := bl.rq.GetBatchMax(ctx, bl.streamName(), subject, from, max(1, limit-len(p.Data)), func(c *jetstream.RawStreamMsg, _ uint64) error {
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
		case errors.Is(err, jsx.ErrNoMessages):
			return p, nil
		case err != nil:
			return Piece{}, fmt.Errorf("blobs: read blob %s: %w", name, err)
		case end.Pending == 0:
			return p, nil
		}
	}
}

// locate finds blob name's chunks in this store: its own, or received
// from another node; and its size (read from the chunks when the other
// node has deleted it since: its delete marker no longer says).
func (bl *Store) locate(ctx context.Context, name string) (int64, string, error) {
	m, err := bl.meta(ctx, name)
	if err != nil {
		return 0, "", err
	}
	if m != nil && !m.info.Deleted {
		return int64(m.info.Size), jsx.ObjChunks(bl.bucket, m.info.NUID), nil
	}
	if m, err = bl.receivedMeta(ctx, name); err != nil {
		return 0, "", err
	}
	if m == nil || m.info.NUID == "" {
		return 0, "", fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	subject := objInChunks(bl.bucket, m.info.NUID)
	if !m.info.Deleted {
		return int64(m.info.Size), subject, nil
	}
	var size int64
	err = bl.rq.EachOf(ctx, bl.streamName(), subject, func(c *jetstream.RawStreamMsg) error {
		size += int64(len(c.Data))
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("blobs: received blob %s: %w", name, err)
	}
	if size == 0 {
		return 0, "", fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return size, subject, nil
}

// elsewhere reads ref's blob where this store does not hold it: received
// from another node (an entry written there names it), or in the node's
// other store (alt).
func (bl *Store) elsewhere(ctx context.Context, ref session.BlobRef) ([]byte, error) {
	b, err := bl.received(ctx, ref)
	if !errors.Is(err, ErrNotFound) || bl.alt == nil {
		return b, err
	}
	b, aerr := bl.alt.obs.GetBytes(ctx, ref.SHA256)
	if errors.Is(aerr, jetstream.ErrObjectNotFound) {
		return nil, err
	}
	if aerr != nil {
		return nil, fmt.Errorf("blobs: get blob %s: %w", ref.SHA256, aerr)
	}
	return b, nil
}
