package snapshots

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/session"
)

// A snapshot's body is a list of segments, each an object of the
// snapshots' store holding the pi JSON lines of a run of entries. Entries
// never change once stored, so a snapshot keeps the segments of the one
// before it and adds one for the entries since: writing the body of a
// session's k-th snapshot was a re-encoding and upload of all its entries,
// which made a session's snapshots cost the square of its length (a
// quarter of a writer's CPU at 20,000 entries).
//
// Segments merge by size, as in a size-tiered log: the new segment takes
// in the last one while that is at most twice its size. Sizes then halve
// at least every other segment, so a body has O(log n) of them, and an
// entry is encoded again only when its segment at least grows by half:
// O(log n) times over the session's life.
//
// A segment is stored under the name of the snapshot that wrote it
// ("<snapshot>.body") and outlives that snapshot while a later one lists
// it. The head record names the segments of the current snapshot and of
// the one before; what neither lists is deleted.

// bodySeg is one segment: entries [From, From+Count) of the session.
type bodySeg struct {
	Object    string `msgpack:"object"` // its name in the snapshots' store
	NUID      string `msgpack:"nuid"`   // the object's id (its chunks' subject)
	From      int    `msgpack:"from"`
	Count     int    `msgpack:"count"`
	Size      int64  `msgpack:"size"`
	Lines     []byte `msgpack:"lines"`     // uvarint length of each line, newline included
	ChunkSeqs []byte `msgpack:"chunkseqs"` // uvarint deltas of its chunks' stream sequences
	ChunkSums []byte `msgpack:"chunksums"` // first 16 bytes of each chunk's SHA-256
	SHA       []byte `msgpack:"sha"`       // SHA-256 of the whole object
}

func segsEnd(segs []bodySeg) int {
	if len(segs) == 0 {
		return 0
	}
	last := segs[len(segs)-1]
	return last.From + last.Count
}

// planSegments says which of prev, the segments of the snapshot before,
// a snapshot of n entries keeps, and from which entry on it encodes a
// new segment (from == n: none, the body is prev as it is). The first
// floor entries are not at hand (a partial tree's): no segment holding
// them is merged, and from < floor says prev cannot be built on.
func planSegments(prev []bodySeg, n, floor int) (keep []bodySeg, from int) {
	if segsEnd(prev) > n || !contiguous(prev) {
		return nil, 0 // not of this tree: start over
	}
	keep, from = prev, segsEnd(prev)
	if from == n {
		return keep, n
	}
	for len(keep) > 0 && keep[len(keep)-1].Count <= 2*(n-from) && keep[len(keep)-1].Size < maxSegmentBytes/2 && keep[len(keep)-1].From >= floor {
		from, keep = keep[len(keep)-1].From, keep[:len(keep)-1]
	}
	return keep, from
}

func contiguous(segs []bodySeg) bool {
	at := 0
	for _, s := range segs {
		if s.From != at || s.Count <= 0 {
			return false
		}
		at += s.Count
	}
	return true
}

// maxSegmentBytes bounds a segment: a snapshot encodes and uploads its
// new entries a segment at a time, and a segment this large is never
// merged into a later one (see planSegments), so no snapshot holds more
// than about this much of a session's encoded entries at once.
const maxSegmentBytes = 16 << 20

// encodeSegment encodes the first of entries as the lines of one segment
// (its object name and storage are filled in by the upload): as many as
// fit in max bytes, and at least one.
func encodeSegment(entries []*session.Entry, from int, max int) ([]byte, bodySeg, error) {
	seg := bodySeg{From: from}
	data := make([]byte, 0, min(max, 512*len(entries)))
	for _, e := range entries {
		if seg.Count > 0 && len(data) >= max {
			break
		}
		start := len(data)
		var err error
		if data, err = codec.AppendEntry(data, e); err != nil {
			return nil, seg, err
		}
		data = append(data, '\n')
		seg.Lines = binary.AppendUvarint(seg.Lines, uint64(len(data)-start))
		seg.Count++
	}
	seg.Size = int64(len(data))
	sum := sha256.Sum256(data)
	seg.SHA = sum[:]
	return data, seg, nil
}

// stored records where the segment's object and chunks were stored.
func (seg *bodySeg) stored(object, nuid string, data []byte, seqs []uint64) {
	seg.Object, seg.NUID = object, nuid
	seg.ChunkSeqs, seg.ChunkSums = chunkIndex(data, seqs)
}

// chunkIndex is where data's chunks were stored, as a skeleton keeps it:
// their stream sequences (uvarint deltas) and the first 16 bytes of each
// one's SHA-256.
func chunkIndex(data []byte, seqs []uint64) (deltas, sums []byte) {
	var prev uint64
	for i, s := range seqs {
		deltas = binary.AppendUvarint(deltas, s-prev)
		prev = s
		sum := sha256.Sum256(data[i*bodyChunk : min((i+1)*bodyChunk, len(data))])
		sums = append(sums, sum[:16]...)
	}
	return deltas, sums
}

// segsDigest is the body's checksum in the skeleton's metadata: the
// SHA-256 of its segments' digests, in order.
func segsDigest(segs []bodySeg) string {
	h := sha256.New()
	for _, s := range segs {
		h.Write(s.SHA)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func segsSize(segs []bodySeg) int64 {
	var n int64
	for _, s := range segs {
		n += s.Size
	}
	return n
}

// segObjects are the names of segs' objects.
func segObjects(segs []bodySeg) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.Object
	}
	return out
}

// segMemo is what a backend remembers of a session's last snapshot, read
// or written, for its next one to build on.
type segMemo struct {
	epoch  uint64
	object string // the snapshot, as its head names it
	segs   []bodySeg
}

// segMemos holds the memos of the sessions last snapshotted, at most
// maxSegMemos (a memo is about two bytes an entry).
type segMemos struct {
	mu sync.Mutex
	c  *lru.Cache[string, segMemo]
}

const maxSegMemos = 1024

func (m *segMemos) get(id string) (segMemo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		return segMemo{}, false
	}
	return m.c.Get(id)
}

func (m *segMemos) put(id string, v segMemo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		m.c = lru.New[string, segMemo]()
	}
	m.c.Put(id, v)
	if m.c.Len() > maxSegMemos+maxSegMemos/4 { // trimmed in rounds: a trim sorts
		m.c.Trim(maxSegMemos, nil)
	}
}

func (m *segMemos) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil {
		m.c.Remove(id)
	}
}

// forgetSnapshot drops what the backend remembers of session id's last
// snapshot: its next one is written whole.
func (sn *Store) Forget(id string) { sn.memos.forget(id) }
