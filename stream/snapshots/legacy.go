package snapshots

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/agentcore/sessionlog/codec"
)

// SaveFormat2 writes src as a snapshot of format 2, as writers before
// segmented bodies did: the body in one object, with the index of its
// entries when indexed (else as writers before that, its body put by the
// object store's client). It becomes the session's current snapshot. It
// is how tests, here and in the packages above, make the data older
// versions left, which this version must still read.
func (sn *Store) SaveFormat2(ctx context.Context, src *Source, indexed bool) error {
	h := src.header
	hj, err := codec.EncodeHeader(&h)
	if err != nil {
		return err
	}
	doc, err := packSkeleton(hj, src.skeleton)
	if err != nil {
		return err
	}
	body := append(append([]byte{}, hj...), '\n')
	doc.HeadLen = len(body)
	for _, e := range src.entries {
		start := len(body)
		if body, err = codec.AppendEntry(body, e); err != nil {
			return err
		}
		body = append(body, '\n')
		doc.Lines = binary.AppendUvarint(doc.Lines, uint64(len(body)-start))
	}
	name := fmt.Sprintf("%s-%d-%d-%s", h.ID, src.epoch, src.seq, nuid.Next())
	if indexed {
		id, seqs, err := sn.putBody(ctx, name+".body", body)
		if err != nil {
			return err
		}
		doc.BodyNUID, doc.Chunk = id, bodyChunk
		doc.ChunkSeqs, doc.ChunkSums = chunkIndex(body, seqs)
	} else {
		doc.HeadLen, doc.Lines = 0, nil
		if _, err := sn.objs.PutBytes(ctx, name+".body", body); err != nil {
			return err
		}
	}
	skel, err := msgpack.Marshal(doc)
	if err != nil {
		return err
	}
	meta := jetstream.ObjectMeta{Name: name + ".skel", Metadata: map[string]string{
		metaVersion: "2", metaSeq: fmt.Sprint(src.seq), metaEpoch: fmt.Sprint(src.epoch),
		metaEntries: fmt.Sprint(len(src.entries)), metaSHA: shaHex(skel), metaBodySHA: shaHex(body),
	}}
	if _, err := sn.objs.Put(ctx, meta, bytes.NewReader(skel)); err != nil {
		return err
	}
	val, _ := json.Marshal(Head{Object: name, Seq: src.seq, Epoch: src.epoch})
	_, err = sn.heads.Put(ctx, h.ID, val)
	return err
}
