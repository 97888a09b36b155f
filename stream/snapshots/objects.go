package snapshots

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// getObject reads a whole object of the snapshots' store by direct gets
// — its description, then its chunks — like a session's messages: the
// object store's own reader creates a consumer, a proposal to the meta
// group, so every open from a snapshot waited out a lost meta leader. The
// size and SHA-256 digest the description gives are checked.
func (sn *Store) getObject(ctx context.Context, name string) ([]byte, *jetstream.ObjectInfo, error) {
	return sn.getObjectMax(ctx, name, maxSnapshotObject)
}

// getObjectMax is getObject of an object of at most max bytes: a larger
// one is refused before it is read.
func (sn *Store) getObjectMax(ctx context.Context, name string, max int64) ([]byte, *jetstream.ObjectInfo, error) {
	data, info, err := sn.fetchObjectMax(ctx, name, max)
	if err == nil {
		err = checkObject(name, data, info)
	}
	if err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

// checkObject checks an object's bytes against its description's size
// and SHA-256 digest.
func checkObject(name string, data []byte, info *jetstream.ObjectInfo) error {
	sum := sha256.Sum256(data)
	if uint64(len(data)) != info.Size || info.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(sum[:]) {
		return fmt.Errorf("%w: %s: digest or size mismatch", ErrUnusable, name)
	}
	return nil
}

// fetchObject is getObject without the digest's check, which its caller
// makes (see checkObject) before it trusts anything read from the bytes.
func (sn *Store) fetchObject(ctx context.Context, name string) ([]byte, *jetstream.ObjectInfo, error) {
	return sn.fetchObjectMax(ctx, name, maxSnapshotObject)
}

func (sn *Store) fetchObjectMax(ctx context.Context, name string, max int64) ([]byte, *jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, sn.timeout)
	defer cancel()
	var info *jetstream.ObjectInfo
	err := sn.rq.Resend(ctx, func(ctx context.Context) (err error) {
		info, err = sn.objs.GetInfo(ctx, name)
		return err
	}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w: %s: %w", ErrUnusable, errSnapshotRead, name, err)
	}
	if info.Size > uint64(max) {
		return nil, nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrUnusable, name, info.Size, max)
	}
	data := make([]byte, 0, info.Size)
	stream, subject := jsx.ObjStream(sn.bucket), jsx.ObjChunks(sn.bucket, info.NUID)
	var last uint64
	for chunks := uint32(0); chunks < info.Chunks; {
		err := sn.rq.Resend(ctx, func(ctx context.Context) error {
			end, err := sn.rq.GetBatch(ctx, stream, subject, last+1, func(m *jetstream.RawStreamMsg, _ uint64) error {
				if uint64(len(data)+len(m.Data)) > info.Size {
					return fmt.Errorf("chunks exceed the object's %d bytes", info.Size)
				}
				data, last = append(data, m.Data...), m.Sequence
				chunks++
				return nil
			})
			if err == nil && end.Pending == 0 && chunks < info.Chunks {
				err = fmt.Errorf("%d of %d chunks", chunks, info.Chunks)
			}
			return err
		}, nil)
		if errors.Is(err, jsx.ErrNoMessages) {
			err = fmt.Errorf("%d of %d chunks", chunks, info.Chunks)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w: %s: %w", ErrUnusable, errSnapshotRead, name, err)
		}
	}
	return data, info, nil
}

// maxSnapshotObject bounds what getObject reads into memory.
const maxSnapshotObject = 4 << 30

// Tip reads the tip of the snapshot head names (see Head.Tip): the leaf's
// context branch, header first, as pi JSONL lines, checked against its
// digest. Tips are written up to maxTipBytes: a larger one is not ours.
func (sn *Store) Tip(ctx context.Context, head Head) ([]byte, error) {
	data, _, err := sn.getObjectMax(ctx, head.Object+".tip", maxTipBytes)
	return data, err
}
