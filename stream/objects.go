package stream

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
func (b *Backend) getObject(ctx context.Context, name string) ([]byte, *jetstream.ObjectInfo, error) {
	return b.getObjectMax(ctx, name, maxSnapshotObject)
}

// getObjectMax is getObject of an object of at most max bytes: a larger
// one is refused before it is read.
func (b *Backend) getObjectMax(ctx context.Context, name string, max int64) ([]byte, *jetstream.ObjectInfo, error) {
	data, info, err := b.fetchObjectMax(ctx, name, max)
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
		return fmt.Errorf("%w: %s: digest or size mismatch", ErrBadSnapshot, name)
	}
	return nil
}

// fetchObject is getObject without the digest's check, which its caller
// makes (see checkObject) before it trusts anything read from the bytes.
func (b *Backend) fetchObject(ctx context.Context, name string) ([]byte, *jetstream.ObjectInfo, error) {
	return b.fetchObjectMax(ctx, name, maxSnapshotObject)
}

func (b *Backend) fetchObjectMax(ctx context.Context, name string, max int64) ([]byte, *jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	var info *jetstream.ObjectInfo
	err := b.rq.Resend(ctx, func(ctx context.Context) (err error) {
		info, err = b.snaps.GetInfo(ctx, name)
		return err
	}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w: %s: %w", ErrBadSnapshot, errSnapshotRead, name, err)
	}
	if info.Size > uint64(max) {
		return nil, nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrBadSnapshot, name, info.Size, max)
	}
	data := make([]byte, 0, info.Size)
	stream, subject := jsx.ObjStream(b.cfg.SnapshotBucket()), jsx.ObjChunks(b.cfg.SnapshotBucket(), info.NUID)
	var last uint64
	for chunks := uint32(0); chunks < info.Chunks; {
		err := b.rq.Resend(ctx, func(ctx context.Context) error {
			end, err := b.rq.GetBatch(ctx, stream, subject, last+1, func(m *jetstream.RawStreamMsg, _ uint64) error {
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
			return nil, nil, fmt.Errorf("%w: %w: %s: %w", ErrBadSnapshot, errSnapshotRead, name, err)
		}
	}
	return data, info, nil
}

// maxSnapshotObject bounds what getObject reads into memory.
const maxSnapshotObject = 4 << 30
