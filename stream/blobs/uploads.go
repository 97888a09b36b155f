package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// Uploads stages content sent in pieces — a blob, or a request larger
// than one message — until it is complete: a stream of its own whose
// messages are the pieces, one subject per upload, kept an hour at most.
// Every node of a deployment sees the same uploads, so the pieces of one
// may reach different service instances.
type Uploads struct {
	rq       *jsx.Requester
	replicas int
	stream   string
	prefix   string

	mu    sync.Mutex
	ready bool
}

// Upload limits.
const (
	// UploadTTL is how long an upload's pieces are kept.
	UploadTTL = time.Hour
	// uploadStreamBytes bounds all uploads in flight together.
	uploadStreamBytes = 4 << 30
)

// ErrUploadOffset is a piece that does not continue its upload where it
// stands (a piece lost, sent twice, or sent concurrently).
var ErrUploadOffset = errors.New("blobs: upload piece out of place")

// ErrUploadNotFound is an upload with no piece (never begun, or expired).
var ErrUploadNotFound = errors.New("blobs: upload not found")

const offsetHeader = "Sessionlog-Offset"

// NewUploads stages uploads in stream (made on first use, with replicas),
// on subjects prefix.<upload id>.
func NewUploads(rq *jsx.Requester, replicas int, stream, prefix string) *Uploads {
	return &Uploads{rq: rq, replicas: replicas, stream: stream, prefix: prefix}
}

func (u *Uploads) provision(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ready {
		return nil
	}
	err := jsx.Provisioning(ctx, func(ctx context.Context) error {
		_, err := u.rq.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        u.stream,
			Description: "sessionlog uploads in progress",
			Subjects:    []string{u.prefix + ".>"},
			Storage:     jetstream.FileStorage,
			Replicas:    u.replicas,
			MaxAge:      UploadTTL,
			MaxBytes:    uploadStreamBytes,
			Discard:     jetstream.DiscardNew,
			AllowDirect: true,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("blobs: provision uploads: %w", err)
	}
	u.ready = true
	return nil
}

func (u *Uploads) subject(id string) string { return u.prefix + "." + id }

// last is the upload's last piece (nil before the first) and the size
// staged so far.
func (u *Uploads) last(ctx context.Context, id string) (*jetstream.RawStreamMsg, int64, error) {
	m, err := u.rq.LastOf(ctx, u.stream, u.subject(id))
	if err != nil || m == nil {
		return nil, 0, err
	}
	off, err := strconv.ParseInt(m.Header.Get(offsetHeader), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("blobs: upload %s: piece without its offset", id)
	}
	return m, off + int64(len(m.Data)), nil
}

// Stage appends a piece at offset to upload id (offset 0 begins it, and
// starts it over if it had pieces) and returns the size staged. A piece
// anywhere but at the end is ErrUploadOffset.
func (u *Uploads) Stage(ctx context.Context, id string, offset int64, data []byte) (int64, error) {
	if err := session.ValidateSessionID(id); err != nil {
		return 0, err
	}
	if err := u.provision(ctx); err != nil {
		return 0, err
	}
	m, size, err := u.last(ctx, id)
	if err != nil {
		return 0, err
	}
	var seq uint64
	switch {
	case offset == 0 && m != nil:
		if err := u.Discard(ctx, id); err != nil {
			return 0, err
		}
		size = 0
	case offset != size:
		return size, fmt.Errorf("%w: upload %s holds %d bytes, the piece starts at %d", ErrUploadOffset, id, size, offset)
	case m != nil:
		seq = m.Sequence
	}
	msg := nats.NewMsg(u.subject(id))
	msg.Header.Set(offsetHeader, strconv.FormatInt(offset, 10))
	msg.Data = data
	// The check makes two pieces sent at once for the same place fail
	// rather than both land.
	if _, err := u.rq.JS.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(seq, u.subject(id))); err != nil {
		if jsx.IsWrongLastSeq(err) {
			return size, fmt.Errorf("%w: upload %s changed while this piece was sent", ErrUploadOffset, id)
		}
		return size, fmt.Errorf("blobs: upload %s: %w", id, err)
	}
	return size + int64(len(data)), nil
}

// Size is how many bytes upload id holds (ErrUploadNotFound if none).
func (u *Uploads) Size(ctx context.Context, id string) (int64, error) {
	if err := u.provision(ctx); err != nil {
		return 0, err
	}
	m, size, err := u.last(ctx, id)
	if err == nil && m == nil {
		err = fmt.Errorf("%w: %s (expired after %v, or never begun)", ErrUploadNotFound, id, UploadTTL)
	}
	return size, err
}

// Open returns a reader of upload id's content and its size: all the
// leader held when Open was called (replicas answering the reads may
// lag: the reader waits for them), its pieces checked to be contiguous.
func (u *Uploads) Open(ctx context.Context, id string) (io.Reader, int64, error) {
	size, err := u.Size(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	return &uploadReader{u: u, ctx: ctx, id: id, size: size, from: 1}, size, nil
}

type uploadReader struct {
	u        *Uploads
	ctx      context.Context
	id       string
	size, at int64 // at: bytes fetched
	from     uint64
	buf      []byte
}

func (r *uploadReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.at >= r.size {
			return 0, io.EOF
		}
		if err := r.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// fetch reads the next batch of pieces into buf.
func (r *uploadReader) fetch() error {
	before := r.at
	_, err := r.u.rq.GetBatch(r.ctx, r.u.stream, r.u.subject(r.id), r.from, func(m *jetstream.RawStreamMsg, _ uint64) error {
		off, err := strconv.ParseInt(m.Header.Get(offsetHeader), 10, 64)
		if err != nil || off != r.at {
			return fmt.Errorf("%w: upload %s: piece at %s where %d was due", ErrUploadOffset, r.id, m.Header.Get(offsetHeader), r.at)
		}
		if r.at+int64(len(m.Data)) > r.size {
			return fmt.Errorf("%w: upload %s grew while it was read", ErrUploadOffset, r.id)
		}
		r.at += int64(len(m.Data))
		r.from = m.Sequence + 1
		r.buf = append(r.buf, m.Data...)
		return nil
	})
	if err != nil && !errors.Is(err, jsx.ErrNoMessages) {
		return err
	}
	if r.at == before {
		select { // a replica behind the leader: its next batch
		case <-r.ctx.Done():
			return fmt.Errorf("blobs: upload %s: read %d of %d bytes: %w", r.id, r.at, r.size, r.ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Discard drops upload id's pieces.
func (u *Uploads) Discard(ctx context.Context, id string) error {
	s, err := u.rq.JS.Stream(ctx, u.stream)
	if err != nil {
		return err
	}
	return s.Purge(ctx, jetstream.WithPurgeSubject(u.subject(id)))
}
