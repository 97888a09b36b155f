package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/telemetry"
)

// ConflictPolicy says what Append does when another writer appended to the
// session since this store last saw it.
type ConflictPolicy int

const (
	// ReturnConflict catches up and returns a *session.ConflictError
	// carrying the new leaf; nothing is written.
	ReturnConflict ConflictPolicy = iota
	// Rebase catches up and, when the refused entries were meant for the
	// leaf, re-parents the first onto the new leaf and retries.
	Rebase
	// Retry catches up and retries the entries as they are, with the
	// parents they name: for appends whose parent was chosen on purpose,
	// which another writer's entries do not invalidate.
	Retry
)

// AppendOptions shape one AppendWith call.
type AppendOptions struct {
	// Policy is the conflict policy of this call.
	Policy ConflictPolicy
	// FollowLeaf puts the first entry onto the leaf as it is when the
	// entries are stored (under the store's lock), whatever parent it was
	// given: for callers that share one store and mean "after whatever is
	// last". With Rebase it also follows other writers' appends.
	FollowLeaf bool
	// IfSequence, when non-zero, makes the append conditional: it is
	// stored only while the session's last stream sequence is IfSequence,
	// whatever Policy says; otherwise a *session.ConflictError reports
	// where the session is now.
	IfSequence uint64
}

// MaxRebases bounds the retries of the Rebase policy for one append.
const MaxRebases = 64

// MaxBatch is the most entries one atomic batch can carry.
const MaxBatch = 1000

// Store is one session kept in the stream. It implements session.Store;
// reads come from the tree it keeps, which holds every entry this store
// wrote or caught up with (Refresh catches up explicitly).
type Store struct {
	*session.TreeStore
	b      *Backend
	id     string
	policy ConflictPolicy

	// epoch is the sequence of the session's header: message ids carry it
	// so that a session deleted and created again is not mistaken for a
	// retry inside the dedupe window.
	epoch   uint64
	lastSeq uint64 // guarded by TreeStore's write lock (Update)

	idx *indexer

	// Snapshots: entries applied since the last one was scheduled
	// (guarded by the write lock) and the job that writes them.
	sinceSnap int
	snap      *job

	// A store opened from a snapshot skeleton has a partial tree: body
	// fetches its entries the first time something reads them (complete).
	// Both are guarded by the write lock; full is the lock-free fast path.
	body     func(ctx context.Context) ([]*session.Entry, error)
	full     atomic.Bool
	fallback error
}

var (
	_ session.Store         = (*Store)(nil)
	_ session.BatchAppender = (*Store)(nil)
	_ session.TreeHolder    = (*Store)(nil)
)

func newStore(b *Backend, t *session.Tree, epoch, lastSeq uint64, policy ConflictPolicy) *Store {
	s := &Store{b: b, id: t.Header().ID, policy: policy, epoch: epoch, lastSeq: lastSeq}
	s.idx = newIndexer(b, b.cfg.indexInterval())
	s.snap = newJob(time.Second, b.cfg.RequestTimeout, s.writeSnapshot)
	s.TreeStore = session.NewTreeStore(t, nil, nil)
	s.full.Store(!t.Partial())
	return s
}

// SnapshotPolicy says when a session's snapshot is due.
type SnapshotPolicy struct {
	Every        int
	OnCompaction bool
}

// Due reports whether entries just applied, after since others, call for
// a snapshot.
func (p SnapshotPolicy) Due(since int, entries []*session.Entry) bool {
	if p.Every > 0 && since >= p.Every {
		return true
	}
	if p.OnCompaction {
		for _, e := range entries {
			if e.Type == session.TypeCompaction {
				return true
			}
		}
	}
	return false
}

// Policy returns the snapshot policy of the config.
func (c Config) Policy() SnapshotPolicy {
	return SnapshotPolicy{Every: c.SnapshotEvery, OnCompaction: c.SnapshotOnCompaction}
}

// applied counts entries folded into the tree and schedules a snapshot
// when one is due. Called with the write lock held.
func (s *Store) applied(entries []*session.Entry) {
	s.sinceSnap += len(entries)
	if s.b.cfg.Policy().Due(s.sinceSnap, entries) {
		s.sinceSnap = 0
		s.snap.trigger()
	}
}

func (s *Store) writeSnapshot(ctx context.Context) error {
	var snap *Snapshot
	err := s.ReadTree(ctx, func(t *session.Tree) (err error) {
		snap, err = EncodeSnapshot(t, s.epoch, s.lastSeq)
		return err
	})
	if err != nil {
		return err
	}
	return s.b.SaveSnapshot(ctx, snap)
}

// complete loads the entries of a store opened from a snapshot skeleton,
// before the first read that needs them.
func (s *Store) complete(ctx context.Context) error {
	if s.full.Load() {
		return nil
	}
	return s.Update(ctx, func(t *session.Tree) error {
		if t.Partial() {
			fallback, err := s.b.complete(ctx, s.id, t, s.body)
			if err != nil {
				return err
			}
			s.fallback = fallback
		}
		s.body = nil
		s.full.Store(true)
		return nil
	})
}

// completeFor loads a partial tree's entries when one of entries reuses an
// id among them (a retry to compare, or a duplicate to report). Called
// with the write lock held.
func (s *Store) completeFor(ctx context.Context, t *session.Tree, entries []*session.Entry) error {
	if !t.Partial() {
		return nil
	}
	for _, e := range entries {
		if got, ok := t.Loaded(e.ID); ok && got == nil {
			fallback, err := s.b.complete(ctx, s.id, t, s.body)
			if err != nil {
				return err
			}
			s.fallback, s.body = fallback, nil
			s.full.Store(true)
			return nil
		}
	}
	return nil
}

// Partial reports whether the store still lacks the entries of the
// snapshot it was opened from (they are read on first need).
func (s *Store) Partial() bool { return !s.full.Load() }

// Fallback says why the snapshot body this store opened from was not used
// (its entries were read from the stream instead), or nil.
func (s *Store) Fallback(ctx context.Context) (err error) {
	_ = s.TreeStore.ReadTree(ctx, func(*session.Tree) error { err = s.fallback; return nil })
	return err
}

// The reads that need entries load them first.

// ReadTree implements session.TreeHolder.
func (s *Store) ReadTree(ctx context.Context, fn func(t *session.Tree) error) error {
	if err := s.complete(ctx); err != nil {
		return err
	}
	return s.TreeStore.ReadTree(ctx, fn)
}

// Get implements session.Store.
func (s *Store) Get(ctx context.Context, id string) (*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.Get(ctx, id)
}

// FindByType implements session.Store.
func (s *Store) FindByType(ctx context.Context, typ session.EntryType) ([]*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.FindByType(ctx, typ)
}

// PathToRoot implements session.Store.
func (s *Store) PathToRoot(ctx context.Context, id string) ([]*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.PathToRoot(ctx, id)
}

// Entries implements session.Store.
func (s *Store) Entries(ctx context.Context) ([]*session.Entry, error) {
	if err := s.complete(ctx); err != nil {
		return nil, err
	}
	return s.TreeStore.Entries(ctx)
}

// Snapshot writes a snapshot of the session now (loading its entries first
// if it was opened from a skeleton).
func (s *Store) Snapshot(ctx context.Context) error { return s.writeSnapshot(ctx) }

// SnapshotStatus reports how many snapshots this store wrote and the last
// error.
func (s *Store) SnapshotStatus() (int, error) { return s.snap.status() }

// ID returns the session id.
func (s *Store) ID() string { return s.id }

// ReadTreeAt runs fn on the tree and the stream sequence it reflects,
// read together: no append lands between them.
func (s *Store) ReadTreeAt(ctx context.Context, fn func(t *session.Tree, seq uint64) error) error {
	return s.TreeStore.ReadTree(ctx, func(t *session.Tree) error { return fn(t, s.lastSeq) })
}

// Sequence returns the stream sequence of the last message this store has
// applied: what a reader waits for to see this store's writes.
func (s *Store) Sequence(ctx context.Context) (seq uint64, err error) {
	err = s.TreeStore.ReadTree(ctx, func(*session.Tree) error { seq = s.lastSeq; return nil })
	return seq, err
}

// Append implements session.Store. See AppendBatch.
func (s *Store) Append(ctx context.Context, e *session.Entry) error {
	return s.AppendBatch(ctx, []*session.Entry{e})
}

// AppendBatch stores entries atomically, checked against the session as
// the stream holds it: if another writer got there first the entries are
// not written and a *session.ConflictError says where the leaf is now (or,
// with the Rebase policy, they are re-parented and retried). Retrying an
// append that was already stored — after a timeout, say — succeeds without
// storing it twice.
func (s *Store) AppendBatch(ctx context.Context, entries []*session.Entry) error {
	return s.AppendWith(ctx, entries, AppendOptions{Policy: s.policy})
}

// AppendWith is AppendBatch with this call's conflict policy and an
// optional sequence precondition. It is traced as a producer span
// (conflicts, rebases and retries are its events) and measured.
func (s *Store) AppendWith(ctx context.Context, entries []*session.Entry, opts AppendOptions) error {
	if len(entries) == 0 {
		return nil
	}
	start := time.Now()
	// The whole call, resends and catching up included, is bounded by
	// RequestTimeout unless the caller set a deadline.
	ctx, cancel := s.b.withTimeout(ctx)
	defer cancel()
	ctx, span := s.b.tel.Tracer.Start(ctx, "sessionlog.append", trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(s.appendAttributes(entries)...)
	}
	outcome := "ok"
	err := s.appendWith(ctx, span, entries, opts, &outcome)
	if err != nil && outcome == "ok" {
		outcome = "error"
	}
	s.b.tel.Appends.Add(ctx, 1, metric.WithAttributes(telemetry.OutcomeKey.String(outcome)))
	s.b.tel.AppendDuration.Record(ctx, telemetry.Seconds(start), metric.WithAttributes(telemetry.OutcomeKey.String(outcome)))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if span.IsRecording() {
		seq, _ := s.Sequence(ctx)
		span.SetAttributes(telemetry.SequenceKey.Int64(int64(seq)))
	}
	span.SetAttributes(telemetry.OutcomeKey.String(outcome))
	span.End()
	return err
}

func (s *Store) msgID(e *session.Entry) string {
	return s.id + ":" + strconv.FormatUint(s.epoch, 10) + ":" + e.ID
}

func (s *Store) appendAttributes(entries []*session.Entry) []attribute.KeyValue {
	first := entries[0]
	kv := telemetry.Messaging(telemetry.OpSend, s.b.cfg.subject(s.id, string(first.Type)), s.msgID(first))
	kv = append(kv, telemetry.SessionKey.String(s.id), telemetry.StreamKey.String(s.b.cfg.Stream),
		telemetry.EntryKey.String(string(first.Type)), telemetry.EntriesKey.Int(len(entries)))
	if len(entries) > 1 {
		kv = append(kv, semconv.MessagingBatchMessageCount(len(entries)))
	}
	return kv
}

// appendWith does AppendWith's work; outcome is set to what happened.
func (s *Store) appendWith(ctx context.Context, span trace.Span, entries []*session.Entry, opts AppendOptions, outcome *string) error {
	if len(entries) == 0 {
		return nil
	}
	if len(entries) > MaxBatch {
		return fmt.Errorf("%w: a batch holds at most %d entries, not %d", session.ErrInvalidEntry, MaxBatch, len(entries))
	}
	for _, e := range entries {
		if e != nil && !typeRE.MatchString(string(e.Type)) {
			return fmt.Errorf("%w: entry %q has type %q, which cannot be a subject token", session.ErrInvalidEntry, e.ID, e.Type)
		}
	}
	return s.Update(ctx, func(t *session.Tree) error {
		if err := s.completeFor(ctx, t, entries); err != nil {
			return err
		}
		if stored(t, entries) {
			*outcome = "duplicate"
			return nil // a retry of an append that succeeded
		}
		if opts.FollowLeaf {
			entries[0].ParentID = t.Leaf()
		}
		if opts.IfSequence != 0 && s.lastSeq < opts.IfSequence {
			// The caller has seen more than this store: catch up first.
			if err := s.catchUpWithLeader(ctx, t); err != nil {
				return err
			}
			if err := s.completeFor(ctx, t, entries); err != nil {
				return err
			}
		}
		for attempt := 0; ; attempt++ {
			if opts.IfSequence != 0 && s.lastSeq != opts.IfSequence {
				*outcome = "conflict"
				return &session.ConflictError{Leaf: t.Leaf(), Sequence: s.lastSeq}
			}
			if err := t.CheckBatch(entries); err != nil {
				return err
			}
			msgs, err := s.messages(ctx, entries)
			if err != nil {
				return err
			}
			seq, dup, err := s.publish(ctx, msgs, func(err error) {
				span.AddEvent("sessionlog.resend", trace.WithAttributes(attribute.String("error", err.Error())))
			})
			if err == nil && !dup {
				for _, e := range entries {
					_ = t.Apply(e) // checked above, under the same lock
				}
				s.applied(entries)
				s.lastSeq = seq
				s.idx.touch(t.Info(), seq)
				return nil
			}
			if err != nil && !isWrongLastSeq(err) && !ambiguous(err) {
				*outcome = "error"
				return fmt.Errorf("stream: append to %s: %w", s.id, err)
			}
			// Someone else wrote, or we cannot tell whether we did: read
			// what the stream holds now.
			if err != nil && ambiguous(err) {
				span.AddEvent("sessionlog.ambiguous", trace.WithAttributes(attribute.String("error", err.Error())))
			}
			oldLeaf, sent := t.Leaf(), s.lastSeq
			if cerr := s.catchUpPast(ctx, t, sent, isWrongLastSeq(err)); cerr != nil {
				*outcome = "error"
				return errors.Join(err, cerr)
			}
			if cerr := s.completeFor(ctx, t, entries); cerr != nil {
				*outcome = "error"
				return errors.Join(err, cerr)
			}
			if stored(t, entries) {
				*outcome = "duplicate"
				return nil
			}
			if err != nil && !isWrongLastSeq(err) {
				*outcome = "error"
				return fmt.Errorf("stream: append to %s: %w", s.id, err)
			}
			retry, resolution := false, "returned"
			switch {
			case attempt >= MaxRebases:
			case isWrongLastSeq(err) && s.lastSeq == sent:
				// The write that failed our check never took: send ours again.
				retry, resolution = true, "resent"
			case opts.IfSequence != 0:
			case opts.Policy == Rebase:
				if retry = rebase(t, entries, oldLeaf); retry {
					resolution = "rebased"
				}
			case opts.Policy == Retry:
				retry, resolution = true, "retried" // CheckBatch above refuses what no longer fits
			}
			s.b.tel.Conflicts.Add(ctx, 1, metric.WithAttributes(attribute.String("resolution", resolution)))
			span.AddEvent("sessionlog.conflict", trace.WithAttributes(
				telemetry.SequenceKey.Int64(int64(s.lastSeq)), attribute.String("sessionlog.leaf", t.Leaf()),
				attribute.String("resolution", resolution), attribute.Int("attempt", attempt)))
			if !retry {
				*outcome = "conflict"
				return &session.ConflictError{Leaf: t.Leaf(), Sequence: s.lastSeq}
			}
		}
	})
}

// stored reports whether every entry is in the tree exactly as given: the
// append is a retry of one that succeeded. An entry that only shares its id
// with a stored one is not stored (Check then reports the duplicate id).
func stored(t *session.Tree, entries []*session.Entry) bool {
	for _, e := range entries {
		got, ok := t.Loaded(e.ID)
		if !ok || got == nil || got.ParentID != e.ParentID || got.Type != e.Type {
			return false
		}
		a, err1 := codec.EncodeEntry(got)
		b, err2 := codec.EncodeEntry(e)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// rebase re-parents the first entry onto the new leaf when it was meant
// for the old one. Moves (leaf entries) and entries aimed elsewhere are
// never re-parented: that would change what they mean.
func rebase(t *session.Tree, entries []*session.Entry, oldLeaf string) bool {
	first := entries[0]
	if first.Type == session.TypeLeaf || first.ParentID != oldLeaf || t.Leaf() == oldLeaf {
		return false
	}
	for _, e := range entries {
		if t.Has(e.ID) {
			return false // another writer stored this id: a conflict, not a rebase
		}
	}
	first.ParentID = t.Leaf()
	return true
}

func (s *Store) messages(ctx context.Context, entries []*session.Entry) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, len(entries))
	max := s.b.maxPayload()
	for i, e := range entries {
		data, err := codec.EncodeEntryMsgpack(e)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", session.ErrInvalidEntry, err)
		}
		if max > 0 && int64(len(data)) > max-1024 {
			return nil, fmt.Errorf("%w: entry %s encodes to %d bytes; the server takes at most %d", ErrEntryTooLarge, e.ID, len(data), max)
		}
		m := nats.NewMsg(s.b.cfg.subject(s.id, string(e.Type)))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, s.msgID(e))
		// Consumers of the entry continue the writer's trace.
		s.b.tel.Inject(ctx, m.Header)
		msgs[i] = m
	}
	return msgs, nil
}

// publish writes msgs (one, or an atomic batch) with the sequence check on
// the first. dup reports a duplicate the server recognised by message id.
//
// A try whose outcome is unknown is sent again, unchanged, until ctx
// ends (see Backend.resend): if the first copy was stored, the second
// fails its sequence check or is recognised by its message id, and the
// caller finds the entries stored when it catches up.
func (s *Store) publish(ctx context.Context, msgs []*nats.Msg, onResend func(error)) (seq uint64, dup bool, err error) {
	ctx, cancel := s.b.withTimeout(ctx)
	defer cancel()
	subjects := s.b.cfg.sessionSubjects(s.id)
	err = s.b.resend(ctx, func(ctx context.Context) error {
		if len(msgs) == 1 {
			ack, err := s.b.js.PublishMsg(ctx, msgs[0], jetstream.WithExpectLastSequenceForSubject(s.lastSeq, subjects))
			if err == nil {
				seq, dup = ack.Sequence, ack.Duplicate
			}
			return err
		}
		msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(s.lastSeq))
		msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, subjects)
		// No flow-control ack on the first message: a batch is at most
		// MaxBatch entries the server takes whole, and the ack costs a
		// round trip.
		ack, err := jetstreamext.PublishMsgBatch(ctx, s.b.js, msgs, jetstreamext.BatchFlowControl{AckFirst: false})
		if err == nil {
			seq = ack.Sequence
		}
		return err
	}, onResend)
	return seq, dup, err
}

// Close lets a snapshot being written finish, writes the session's index
// record, and closes the store. It is idempotent.
func (s *Store) Close(ctx context.Context) error {
	s.snap.close() // before the tree closes: the job reads it
	err := s.idx.close(ctx)
	return errors.Join(err, s.TreeStore.Close(ctx))
}

// indexInterval is how often a store refreshes its session's index entry
// while it is being written to.
// Each write is a replicated, fsynced message: with many sessions being
// written at once, a shorter interval takes a visible share of the
// stream's write capacity from the appends themselves.
func (c Config) indexInterval() time.Duration { return time.Second }
