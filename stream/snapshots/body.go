package snapshots

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// A snapshot body addressable per entry. The body is an ordinary object
// of the snapshots' store (a reader of the whole reads it as before), but
// put here rather than by the object store's client, so that the stream
// sequence of each of its chunks is known and goes into the skeleton with
// each entry line's length: the entries a context needs are then read as
// the few chunks holding them, by direct get, and decoded alone.

// bodyChunk is the body's chunk size: a context's few hundred entries
// span one or two.
const bodyChunk = 128 << 10

// putBody stores data as object name of the snapshots' store and returns
// its object id and the sequence of each chunk.
func (sn *Store) putBody(ctx context.Context, name string, data []byte) (string, []uint64, error) {
	bucket := sn.bucket
	id := nuid.Next()
	subject := jsx.ObjChunks(bucket, id)
	var futures []jetstream.PubAckFuture
	fail := func(err error) (string, []uint64, error) {
		s, serr := sn.rq.JS.Stream(context.WithoutCancel(ctx), jsx.ObjStream(bucket))
		if serr == nil {
			_ = s.Purge(context.WithoutCancel(ctx), jetstream.WithPurgeSubject(subject))
		}
		return "", nil, fmt.Errorf("snapshots: snapshot body %s: %w", name, err)
	}
	for off := 0; off < len(data); off += bodyChunk {
		m := nats.NewMsg(subject)
		m.Data = data[off:min(off+bodyChunk, len(data))]
		f, err := sn.rq.JS.PublishMsgAsync(m)
		if err != nil {
			return fail(err)
		}
		futures = append(futures, f)
	}
	seqs := make([]uint64, len(futures))
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			return fail(err)
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	sum := sha256.Sum256(data)
	info := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: bodyChunk}},
		Bucket:     bucket, NUID: id, Size: uint64(len(data)), Chunks: uint32(len(seqs)),
		Digest: "SHA-256=" + base64.URLEncoding.EncodeToString(sum[:]),
	}
	meta, err := json.Marshal(info)
	if err != nil {
		return fail(err)
	}
	m := nats.NewMsg(jsx.ObjMeta(bucket, name))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = meta
	if _, err := sn.rq.JS.PublishMsg(ctx, m); err != nil {
		return fail(err)
	}
	return id, seqs, nil
}

// Index is where a snapshot body's entries lie: entry i is bytes
// [starts[i], starts[i+1]) of the body as one file (its segments end to
// end), in the segment segs[k] that holds entries from segs[k].first.
type Index struct {
	starts []int64
	chunk  int64
	segs   []segPlace
}

// segPlace is where one segment (or a body of format 2, whole) is stored.
type segPlace struct {
	first int   // its first entry
	base  int64 // its first byte's offset in the body
	nuid  string
	seqs  []uint64 // each chunk's stream sequence
	sums  []byte   // the first 16 bytes of each chunk's SHA-256
}

// bodyIndexOf reads the index of a skeleton of n entries, or nil if it
// has none (a snapshot of format 2 written before) or it is damaged.
func bodyIndexOf(doc *skeletonDoc, n int) *Index {
	ix := &Index{chunk: bodyChunk, starts: make([]int64, 0, n+1)}
	lines := func(at int64, l []byte) (int64, bool) {
		for len(l) > 0 {
			v, k := binary.Uvarint(l)
			if k <= 0 || v == 0 {
				return 0, false
			}
			ix.starts = append(ix.starts, at)
			at += int64(v)
			l = l[k:]
		}
		return at, true
	}
	place := func(p segPlace, size int64, seqs, sums []byte) bool {
		var prev uint64
		for rest := seqs; len(rest) > 0; {
			d, k := binary.Uvarint(rest)
			if k <= 0 {
				return false
			}
			prev += d
			p.seqs = append(p.seqs, prev)
			rest = rest[k:]
		}
		p.sums = sums
		ix.segs = append(ix.segs, p)
		return int64(len(p.seqs)) == (size+ix.chunk-1)/ix.chunk && len(p.sums) == 16*len(p.seqs)
	}
	var at int64            // the end of the last line
	if len(doc.Segs) == 0 { // format 2: the header line, then the entries
		if doc.Chunk != bodyChunk || doc.BodyNUID == "" || doc.HeadLen <= 0 {
			return nil
		}
		var ok bool
		if at, ok = lines(int64(doc.HeadLen), doc.Lines); !ok || !place(segPlace{nuid: doc.BodyNUID}, at, doc.ChunkSeqs, doc.ChunkSums) {
			return nil
		}
	} else {
		for _, seg := range doc.Segs {
			if seg.From != len(ix.starts) {
				return nil
			}
			end, ok := lines(at, seg.Lines)
			if !ok || end-at != seg.Size || len(ix.starts)-seg.From != seg.Count ||
				!place(segPlace{first: seg.From, base: at, nuid: seg.NUID}, seg.Size, seg.ChunkSeqs, seg.ChunkSums) {
				return nil
			}
			at = end
		}
	}
	if len(ix.starts) != n {
		return nil
	}
	ix.starts = append(ix.starts, at)
	return ix
}

// EntriesAt reads the entries at positions from the body's chunks;
// chunks keeps those read (by stream sequence), for the next round of the
// same context.
func (sn *Store) EntriesAt(ctx context.Context, ix *Index, positions []int32, chunks map[uint64][]byte) ([]*session.Entry, error) {
	bucket := sn.bucket
	stream := jsx.ObjStream(bucket)
	read := func(sp *segPlace, k int64) ([]byte, error) {
		if k >= int64(len(sp.seqs)) {
			return nil, fmt.Errorf("%w: body chunk %d of %d", ErrUnusable, k, len(sp.seqs))
		}
		seq := sp.seqs[k]
		if c, ok := chunks[seq]; ok {
			return c, nil
		}
		var m *jetstream.RawStreamMsg
		err := sn.rq.Resend(ctx, func(ctx context.Context) (err error) {
			m, err = sn.rq.GetOne(ctx, stream, map[string]uint64{"seq": seq}, false)
			return err
		}, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %w: body chunk %d: %w", ErrUnusable, errSnapshotRead, k, err)
		}
		if m == nil || m.Subject != jsx.ObjChunks(bucket, sp.nuid) {
			return nil, fmt.Errorf("%w: body chunk %d is not at sequence %d", ErrUnusable, k, seq)
		}
		if sum := sha256.Sum256(m.Data); string(sum[:16]) != string(sp.sums[16*k:16*k+16]) {
			return nil, fmt.Errorf("%w: body chunk %d checksum mismatch", ErrUnusable, k)
		}
		chunks[seq] = m.Data
		return m.Data, nil
	}
	out := make([]*session.Entry, len(positions))
	for i, p := range positions {
		if p < 0 || int(p)+1 >= len(ix.starts) {
			return nil, fmt.Errorf("%w: no entry %d in the body", ErrUnusable, p)
		}
		// The segment holding it: the last that starts at or before it.
		k := sort.Search(len(ix.segs), func(k int) bool { return ix.segs[k].first > int(p) }) - 1
		if k < 0 {
			return nil, fmt.Errorf("%w: no segment holds entry %d", ErrUnusable, p)
		}
		sp := &ix.segs[k]
		lo, hi := ix.starts[p]-sp.base, ix.starts[p+1]-1-sp.base // without the newline
		line := make([]byte, 0, hi-lo)
		for c := lo / ix.chunk; c*ix.chunk < hi; c++ {
			data, err := read(sp, c)
			if err != nil {
				return nil, err
			}
			from, to := max(lo-c*ix.chunk, 0), min(hi-c*ix.chunk, int64(len(data)))
			if from > to {
				return nil, fmt.Errorf("%w: body chunk %d is short", ErrUnusable, c)
			}
			line = append(line, data[from:to]...)
		}
		e, err := codec.DecodeEntry(line)
		if err != nil {
			return nil, fmt.Errorf("%w: body entry %d: %w", ErrUnusable, p, err)
		}
		out[i] = e
	}
	return out, nil
}
