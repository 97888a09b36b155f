package snapshots

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// A snapshot as stored: the skeleton (every entry's id, parent and type,
// and the entries a context needs) and the body (all entries, in
// segments: see snapshot_segments.go), encoded for the object store.

// skeletonDoc is the skeleton object's content. The per-entry columns are
// packed (ids in one string, varint parents, a byte per type) so that a
// 100k-entry skeleton decodes with a handful of allocations.
type skeletonDoc struct {
	Header   []byte    `msgpack:"header"` // pi JSON of the header
	IDs      string    `msgpack:"ids"`    // every id, concatenated
	IDLens   []byte    `msgpack:"idlens"` // uvarint length of each
	Parents  []byte    `msgpack:"parents"`
	TypeDict []string  `msgpack:"typedict"`
	Types    []byte    `msgpack:"types"`  // index into TypeDict
	Sorted   []byte    `msgpack:"sorted"` // uvarint positions in id order
	Rest     skelState `msgpack:"rest"`   // the state the entries built
	// Where each entry lies in the body, for reading only some: the
	// header line's length and each entry line's (uvarint, newline
	// included), and how the body object is stored — its object id,
	// chunk size, each chunk's stream sequence (uvarint deltas) and the
	// first 16 bytes of its SHA-256. Snapshots without (written before)
	// are read whole.
	HeadLen   int    `msgpack:"headlen,omitempty"`
	Lines     []byte `msgpack:"lines,omitempty"`
	BodyNUID  string `msgpack:"bodynuid,omitempty"`
	Chunk     int    `msgpack:"chunk,omitempty"`
	ChunkSeqs []byte `msgpack:"chunkseqs,omitempty"`
	ChunkSums []byte `msgpack:"chunksums,omitempty"`
	// Segs is the body of a snapshot of the current format (3): the
	// fields above are those of format 2, a body in one object.
	Segs []bodySeg `msgpack:"segs,omitempty"`
}

// skelState is the skeleton's state beside its columns. (The key names
// are those of the first format, which stored the whole session.Skeleton
// here with its columns empty: such snapshots decode the same.)
type skelState struct {
	Leaf    int32         `msgpack:"leaf"`
	Name    string        `msgpack:"name"`
	Labels  []skelLabel   `msgpack:"labels"`
	NLabel  int           `msgpack:"nlabel"`
	Stats   session.Stats `msgpack:"stats"`
	Updated string        `msgpack:"updated"`
	// Origins: the leaves of the nodes that wrote the session (edge
	// nodes); absent for a session written by unnamed nodes only.
	Origins []skelOrigin `msgpack:"origins,omitempty"`
}

type skelOrigin struct {
	Origin string `msgpack:"origin"`
	Leaf   int32  `msgpack:"leaf"`
	At     string `msgpack:"at"`
}

type skelLabel struct {
	Target string `msgpack:"target"`
	Label  string `msgpack:"label"`
	At     string `msgpack:"at"`
	Order  int    `msgpack:"order"`
}

func packSkeleton(h []byte, sk session.Skeleton) (*skeletonDoc, error) {
	d := &skeletonDoc{Header: h, Rest: skelState{Leaf: sk.Leaf, Name: sk.Name, NLabel: sk.NLabel, Stats: sk.Stats, Updated: sk.Updated}}
	for _, l := range sk.Labels {
		d.Rest.Labels = append(d.Rest.Labels, skelLabel(l))
	}
	for _, o := range sk.Origins {
		d.Rest.Origins = append(d.Rest.Origins, skelOrigin(o))
	}
	for _, i := range sk.Sorted {
		d.Sorted = binary.AppendUvarint(d.Sorted, uint64(i))
	}
	for i := range sk.IDs.Len() {
		d.IDLens = binary.AppendUvarint(d.IDLens, uint64(len(sk.IDs.At(i))))
		d.Parents = binary.AppendUvarint(d.Parents, uint64(sk.Parents[i]+1))
	}
	d.Types = sk.Types
	for _, t := range sk.TypeDict {
		d.TypeDict = append(d.TypeDict, string(t))
	}
	d.IDs = sk.IDs.All()
	return d, nil
}

func (d *skeletonDoc) unpack() (session.Skeleton, error) {
	r := d.Rest
	sk := session.Skeleton{Leaf: r.Leaf, Name: r.Name, NLabel: r.NLabel, Stats: r.Stats, Updated: r.Updated}
	for _, l := range r.Labels {
		sk.Labels = append(sk.Labels, session.SkelLabel(l))
	}
	for _, o := range r.Origins {
		sk.Origins = append(sk.Origins, session.OriginLeaf(o))
	}
	n := len(d.Types)
	ends := make([]uint32, n)
	sk.Parents, sk.Types = make([]int32, n), d.Types
	dict := make([]session.EntryType, len(d.TypeDict))
	for i, t := range d.TypeDict {
		dict[i] = session.EntryType(t)
	}
	sk.TypeDict = dict
	lens, parents := d.IDLens, d.Parents
	var end uint64
	for i := range n {
		l, k := binary.Uvarint(lens)
		p, m := binary.Uvarint(parents)
		if k <= 0 || m <= 0 || l > uint64(len(d.IDs))-end || int(d.Types[i]) >= len(dict) || p > uint64(i) {
			return sk, fmt.Errorf("%w: skeleton column %d is damaged", ErrUnusable, i)
		}
		end += l
		ends[i], lens = uint32(end), lens[k:]
		sk.Parents[i], parents = int32(p)-1, parents[m:]
	}
	if len(d.IDs) > math.MaxUint32 {
		return sk, fmt.Errorf("%w: skeleton ids of %d bytes", ErrUnusable, len(d.IDs))
	}
	sk.Sorted = make([]int32, 0, n)
	for rest := d.Sorted; len(rest) > 0; {
		v, k := binary.Uvarint(rest)
		if k <= 0 || v >= uint64(n) {
			return sk, fmt.Errorf("%w: skeleton sort column is damaged", ErrUnusable)
		}
		sk.Sorted, rest = append(sk.Sorted, int32(v)), rest[k:]
	}
	if end != uint64(len(d.IDs)) || len(lens) != 0 || len(parents) != 0 || len(sk.Sorted) != n {
		return sk, fmt.Errorf("%w: skeleton columns disagree in length", ErrUnusable)
	}
	ids, err := session.PackIDs(d.IDs, ends)
	if err != nil {
		return sk, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	sk.IDs = ids
	return sk, nil
}

// Source is what a snapshot of a tree holds, taken from it at one
// moment: cheap to take (the entries are shared — a tree never changes an
// entry it holds — and the skeleton is a copy of ids and links), so that
// callers hold the tree's lock only for that, and the encoding, the
// costly part, runs without it while the tree takes more writes.
type Source struct {
	header  session.Header
	entries []*session.Entry
	// missing is how many of the first entries may be nil: a partial
	// tree's skeleton, which the snapshot it was opened from holds in its
	// segments.
	missing    int
	skeleton   session.Skeleton
	epoch, seq uint64
	// tip is the leaf's branch a stand-in is made from (StandInBranch):
	// what an open answers a context from before it loads the skeleton.
	tip []*session.Entry
}

// A tip is written only when it is this small: a session without a
// compaction has its whole branch as its context, and then the skeleton
// is the cheaper read.
const (
	maxTipEntries = 4096
	maxTipBytes   = 2 << 20
)

// Capture takes t's snapshot source (call it under the lock that
// guards t), a complete tree covering the session of the given epoch up
// to stream sequence seq.
func Capture(t *session.Tree, epoch, seq uint64) (*Source, error) {
	entries, missing := t.EntriesSoFar()
	sk, err := t.Skeleton()
	if err != nil {
		return nil, err
	}
	src := &Source{header: t.Header(), entries: entries, missing: missing, skeleton: sk, epoch: epoch, seq: seq}
	// A tip is of one origin's session: a stand-in cannot decide the
	// leaf among several (session.StandIn.ApplyFrom).
	if leaf := t.Leaf(); leaf != "" && missing == 0 && len(sk.Origins) <= 1 {
		if tip, ok, err := t.StandInBranch(leaf, maxTipEntries); err == nil && ok && len(tip) < len(entries) {
			src.tip = tip
		}
	}
	return src, nil
}

// ID is the session src is a snapshot of.
func (src *Source) ID() string { return src.header.ID }

// ErrPartialSource is a snapshot of a partial tree whose missing entries
// the snapshot before does not hold (or no longer can be built on): its
// writer loads the tree and captures it again.
var ErrPartialSource = errors.New("snapshots: snapshot of a partial tree needs its entries")

// encodedSnapshot is a snapshot encoded, ready to upload without a lock:
// its skeleton's document, whose last segment is data unless the
// snapshot adds none.
type encodedSnapshot struct {
	id         string
	epoch, seq uint64
	entries    int
	doc        *skeletonDoc
	// fresh are the entries new segments are to hold, from freshFrom on:
	// encoded at the upload, a segment of at most maxSegmentBytes at a
	// time, so a snapshot of any session costs a segment's memory.
	fresh     []*session.Entry
	freshFrom int
	reused    bool   // it keeps segments of the snapshot before
	tip       []byte // the tip's lines, header first (nil: none)
	origin    string // the one node the session was written on, if named
}

// encode makes the snapshot, keeping what it can of prev, the segments
// of the session's snapshot before (see planSegments).
func (src *Source) encode(prev []bodySeg) (*encodedSnapshot, error) {
	h := src.header
	hj, err := codec.EncodeHeader(&h)
	if err != nil {
		return nil, err
	}
	doc, err := packSkeleton(hj, src.skeleton)
	if err != nil {
		return nil, err
	}
	n := len(src.entries)
	keep, from := planSegments(prev, n, src.missing)
	if from < src.missing {
		return nil, ErrPartialSource
	}
	es := &encodedSnapshot{id: h.ID, epoch: src.epoch, seq: src.seq, entries: n, doc: doc, reused: len(keep) > 0}
	if len(src.skeleton.Origins) == 1 {
		es.origin = src.skeleton.Origins[0].Origin
	}
	doc.Segs = append(make([]bodySeg, 0, len(keep)+1), keep...)
	if from < n {
		es.fresh, es.freshFrom = src.entries[from:], from
	}
	if src.tip != nil {
		tip := append(append([]byte(nil), hj...), '\n')
		for _, e := range src.tip {
			if tip, err = codec.AppendEntry(tip, e); err != nil {
				return nil, err
			}
			if tip = append(tip, '\n'); len(tip) > maxTipBytes {
				tip = nil
				break
			}
		}
		es.tip = tip
	}
	return es, nil
}

func shaHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
