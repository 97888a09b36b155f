package stream

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Resend exposes the resending of requests whose outcome is unknown.
func (b *Backend) Resend(ctx context.Context, fn func(ctx context.Context) error, onResend func(error)) error {
	return b.resend(ctx, fn, onResend)
}

// ErrInProcess and ErrUnavailable are the server's answers resend waits out.
var ErrInProcess, ErrUnavailable error = errInProcess, errUnavailable

// SnapshotStatus reports how many snapshots st wrote and the last error.
func SnapshotStatus(st *Store) (int, error) { return st.snap.Status() }

// Fallback says why the snapshot body st opened from was not used.
func Fallback(ctx context.Context, st *Store) error { return st.fallbackErr(ctx) }

// LoseFirstHeaderAck makes the first header publish of every partition
// store the header and then report a timeout, as a lost acknowledgement
// would.
func LoseFirstHeaderAck(b *Backend) {
	for _, p := range b.parts {
		lost := false
		p.publishHook = func(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
			ack, err := p.js.PublishMsg(ctx, m, opts...)
			if err == nil && !lost {
				lost = true
				return nil, nats.ErrTimeout
			}
			return ack, err
		}
	}
}

// ListReads is how many index records b's listings read.
func ListReads(b *Backend) (n uint64) {
	for _, p := range b.parts {
		n += p.listReads.Load()
	}
	return n
}

// TypedSubjects makes New provision a new deployment in the layout of
// deployments made before a subject per session: a subject per entry type.
func TypedSubjects(c Config) Config {
	c.typed = true
	return c
}

// SetBlobClock replaces the clock blobs judge ages by.
func SetBlobClock(b *Backend, now func() time.Time) { b.blobs.now = now }

// OnBlobTouch runs fn when an append is about to touch a blob; OnBlobDelete
// when a collection is about to delete one.
func OnBlobTouch(b *Backend, fn func(name string))  { b.blobs.beforeTouch = fn }
func OnBlobDelete(b *Backend, fn func(name string)) { b.blobs.beforeDelete = fn }

// BlobFetches counts the blobs b read from its object store.
func BlobFetches(b *Backend) int64 { return b.blobs.fetches.Load() }

// WithoutIndex makes snap a snapshot of the format before bodies were
// indexed (its body is then put by the object store's client).
func WithoutIndex(snap *Snapshot) { snap.doc = nil }

// SetMaxScanned lowers the records a filtered listing page reads, until
// the returned function restores it.
func SetMaxScanned(n int) (restore func()) {
	old := maxScanned
	maxScanned = n
	return func() { maxScanned = old }
}

// LoseFirstBatchAck makes the first atomic batch of every partition be
// stored and then reported as timed out, as a lost acknowledgement would.
func LoseFirstBatchAck(b *Backend) {
	for _, p := range b.parts {
		p.batchHook = func(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
			p.batchHook = nil // the resend goes out as it is
			seq, err := p.publishBatch(ctx, msgs)
			if err == nil {
				return 0, nats.ErrTimeout
			}
			return seq, err
		}
	}
}
