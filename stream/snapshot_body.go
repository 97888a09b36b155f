package stream

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
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
func (b *Backend) putBody(ctx context.Context, name string, data []byte) (string, []uint64, error) {
	bucket := b.cfg.SnapshotBucket()
	id := nuid.Next()
	subject := objChunks(bucket, id)
	var futures []jetstream.PubAckFuture
	fail := func(err error) (string, []uint64, error) {
		s, serr := b.js.Stream(context.WithoutCancel(ctx), objStream(bucket))
		if serr == nil {
			_ = s.Purge(context.WithoutCancel(ctx), jetstream.WithPurgeSubject(subject))
		}
		return "", nil, fmt.Errorf("stream: snapshot body %s: %w", name, err)
	}
	for off := 0; off < len(data); off += bodyChunk {
		m := nats.NewMsg(subject)
		m.Data = data[off:min(off+bodyChunk, len(data))]
		f, err := b.js.PublishMsgAsync(m)
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
	m := nats.NewMsg(objMeta(bucket, name))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = meta
	if _, err := b.js.PublishMsg(ctx, m); err != nil {
		return fail(err)
	}
	return id, seqs, nil
}

// index records in doc where body's chunks were stored.
func (doc *skeletonDoc) index(body []byte, nuid string, seqs []uint64) {
	doc.BodyNUID, doc.Chunk = nuid, bodyChunk
	var prev uint64
	for i, s := range seqs {
		doc.ChunkSeqs = binary.AppendUvarint(doc.ChunkSeqs, s-prev)
		prev = s
		sum := sha256.Sum256(body[i*bodyChunk : min((i+1)*bodyChunk, len(body))])
		doc.ChunkSums = append(doc.ChunkSums, sum[:16]...)
	}
}

// bodyIndex is where a snapshot body's entries lie: line i is bytes
// [starts[i], starts[i+1]) of the body, chunk k at sequence seqs[k].
type bodyIndex struct {
	starts []int64
	size   int64
	chunk  int64
	seqs   []uint64
	sums   []byte
	nuid   string
}

// bodyIndexOf reads the index of a skeleton of n entries, or nil if it
// has none (a snapshot written before) or it is damaged.
func bodyIndexOf(doc *skeletonDoc, n int) *bodyIndex {
	if doc.Chunk <= 0 || doc.BodyNUID == "" || doc.HeadLen <= 0 {
		return nil
	}
	ix := &bodyIndex{chunk: int64(doc.Chunk), nuid: doc.BodyNUID, starts: make([]int64, 0, n+1), sums: doc.ChunkSums}
	at := int64(doc.HeadLen)
	for rest := doc.Lines; len(rest) > 0; {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l == 0 {
			return nil
		}
		ix.starts = append(ix.starts, at)
		at += int64(l)
		rest = rest[k:]
	}
	ix.starts = append(ix.starts, at)
	ix.size = at
	var prev uint64
	for rest := doc.ChunkSeqs; len(rest) > 0; {
		d, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil
		}
		prev += d
		ix.seqs = append(ix.seqs, prev)
		rest = rest[k:]
	}
	if len(ix.starts) != n+1 || int64(len(ix.seqs)) != (ix.size+ix.chunk-1)/ix.chunk || len(ix.sums) != 16*len(ix.seqs) {
		return nil
	}
	return ix
}

// entriesAt reads the entries at positions from the body's chunks;
// chunks keeps those read, for the next round of the same context.
func (b *Backend) entriesAt(ctx context.Context, ix *bodyIndex, positions []int32, chunks map[int64][]byte) ([]*session.Entry, error) {
	bucket := b.cfg.SnapshotBucket()
	stream, subject := objStream(bucket), objChunks(bucket, ix.nuid)
	read := func(k int64) ([]byte, error) {
		if c, ok := chunks[k]; ok {
			return c, nil
		}
		var m *jetstream.RawStreamMsg
		err := b.resend(ctx, func(ctx context.Context) (err error) {
			m, err = b.getOne(ctx, stream, map[string]uint64{"seq": ix.seqs[k]}, false)
			return err
		}, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %w: body chunk %d: %w", ErrBadSnapshot, errSnapshotRead, k, err)
		}
		if m == nil || m.Subject != subject {
			return nil, fmt.Errorf("%w: body chunk %d is not at sequence %d", ErrBadSnapshot, k, ix.seqs[k])
		}
		if sum := sha256.Sum256(m.Data); string(sum[:16]) != string(ix.sums[16*k:16*k+16]) {
			return nil, fmt.Errorf("%w: body chunk %d checksum mismatch", ErrBadSnapshot, k)
		}
		chunks[k] = m.Data
		return m.Data, nil
	}
	out := make([]*session.Entry, len(positions))
	for i, p := range positions {
		if p < 0 || int(p)+1 >= len(ix.starts) {
			return nil, fmt.Errorf("%w: no entry %d in the body", ErrBadSnapshot, p)
		}
		lo, hi := ix.starts[p], ix.starts[p+1]-1 // without the newline
		line := make([]byte, 0, hi-lo)
		for k := lo / ix.chunk; k*ix.chunk < hi; k++ {
			c, err := read(k)
			if err != nil {
				return nil, err
			}
			from, to := max(lo-k*ix.chunk, 0), min(hi-k*ix.chunk, int64(len(c)))
			if from > to {
				return nil, fmt.Errorf("%w: body chunk %d is short", ErrBadSnapshot, k)
			}
			line = append(line, c[from:to]...)
		}
		e, err := codec.DecodeEntry(line)
		if err != nil {
			return nil, fmt.Errorf("%w: body entry %d: %w", ErrBadSnapshot, p, err)
		}
		out[i] = e
	}
	return out, nil
}
