package stream

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// Resend exposes the resending of requests whose outcome is unknown.
func (b *Backend) Resend(ctx context.Context, fn func(ctx context.Context) error, onResend func(error)) error {
	return b.rq.Resend(ctx, fn, onResend)
}

// ErrInProcess and ErrUnavailable are the server's answers resend waits out.
var ErrInProcess, ErrUnavailable error = jsx.ErrInProcess, jsx.ErrUnavailable

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
func SetBlobClock(b *Backend, now func() time.Time) { b.blobs.SetHooks(blobs.Hooks{Now: now}) }

// OnBlobTouch runs fn when an append is about to touch a blob; OnBlobDelete
// when a collection is about to delete one.
func OnBlobTouch(b *Backend, fn func(name string)) { b.blobs.SetHooks(blobs.Hooks{BeforeTouch: fn}) }
func OnBlobDelete(b *Backend, fn func(name string)) {
	b.blobs.SetHooks(blobs.Hooks{BeforeDelete: fn})
}

// BlobFetches counts the blobs b read from its object store.
func BlobFetches(b *Backend) int64 { return b.blobs.Fetches() }

// SaveSnapshotFormat2 writes src as a snapshot of format 2 (see
// snapshots.Store.SaveFormat2).
func SaveSnapshotFormat2(ctx context.Context, b *Backend, src *snapshots.Source, indexed bool) error {
	return b.partOf(src.ID()).snaps.SaveFormat2(ctx, src, indexed)
}

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

// SnapshotHead is a session's head record: its current snapshot and the
// one before, and the body segments of each.
func SnapshotHead(ctx context.Context, b *Backend, id string) (object, prev string, segs, prevSegs []string, err error) {
	h, err := b.partOf(id).snaps.Current(ctx, id)
	return h.Object, h.Prev, h.Segments(), h.PrevSegments(), err
}

// ForgetSnapshots makes b forget the last snapshot of session id, so that
// its next is written whole (the baseline of the segmented bodies).
func ForgetSnapshots(b *Backend, id string) { b.forgetSnapshot(id) }

// Deferred reports whether st still answers from a snapshot tip's
// stand-in (its skeleton not read yet).
func Deferred(st *Store) bool { return st.tree.Deferred() }

// ReplayedEntries reads a session's entries from its messages in the
// stream alone, no snapshot.
func (b *Backend) ReplayedEntries(ctx context.Context, id string) ([]*session.Entry, error) {
	t, _, _, err := b.loadTreeOnce(ctx, id)
	if err != nil {
		return nil, err
	}
	return t.Entries()
}

// WrapSends gives wrap each attempt to send an append's messages (one, or
// an atomic batch's): it makes it with send, when it likes, and what it
// returns is the attempt's outcome.
func WrapSends(b *Backend, wrap func(msgs []*nats.Msg, send func() error) error) {
	for _, p := range b.parts {
		p.sendHook = wrap
	}
}

// SetSendCosts sets what b takes a single send and an atomic batch to
// cost (see sendCosts).
func SetSendCosts(b *Backend, single, batch time.Duration) {
	for _, p := range b.parts {
		p.costs.mu.Lock()
		p.costs.single, p.costs.batch = single, batch
		p.costs.mu.Unlock()
	}
}

// GroupQueued is how many appends st's group queue holds (group.go).
func GroupQueued(st *Store) int {
	st.group.mu.Lock()
	defer st.group.mu.Unlock()
	return len(st.group.queue)
}

// OnSnapshotHead runs fn when a save of b is about to read the head it
// replaces.
func OnSnapshotHead(b *Backend, fn func(id string)) {
	for _, p := range b.parts {
		p.snaps.SetHooks(snapshots.Hooks{BeforeHead: fn})
	}
}

// BarriersWritten is how many read barriers b's partitions wrote.
func BarriersWritten(b *Backend) uint64 {
	var n uint64
	for _, p := range b.parts {
		n += p.barriers.Load()
	}
	return n
}

// AlwaysBarrier makes every fresh read of b take the read barrier, as it
// did before a stream on one server alone was read without one.
func AlwaysBarrier(b *Backend) {
	for _, p := range b.parts {
		p.noSolo = true
	}
}

// SoloLast is a fresh read's look at subject on a stream alone (solo.go).
func SoloLast(ctx context.Context, b *Backend, subject string) (uint64, bool, error) {
	r, err := b.lastAndPosition(ctx, subject)
	return r.last, r.fromStream, err
}
