package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
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
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
	"github.com/agentcore/sessionlog/telemetry"
)

// Appending: checked against the session as the stream holds it (the
// sequence precondition), with the conflict policy deciding what a lost
// check means, traced and measured.

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
	// RequestTimeout unless the caller set a deadline: a bound whose timer
	// is made only if something waits on it.
	ctx, cancel := s.b.withBound(ctx)
	defer cancel()
	ctx, span := s.b.tel.Tracer.Start(ctx, "sessionlog.append", producerSpan)
	if span.IsRecording() {
		span.SetAttributes(s.appendAttributes(entries)...)
	}
	outcome := "ok"
	err := s.appendWith(ctx, span, entries, decide(opts, entries), &outcome)
	if err != nil && outcome == "ok" {
		outcome = "error"
	}
	attrs := outcomeAttrs(outcome)
	s.b.tel.Appends.Add(ctx, 1, attrs)
	s.b.tel.AppendDuration.Record(ctx, telemetry.Seconds(start), attrs)
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

// outcomes are the measurement options of each append outcome, made once:
// building the attribute set on every append was an allocation each.
var outcomes = func() map[string]metric.MeasurementOption {
	m := map[string]metric.MeasurementOption{}
	for _, o := range []string{"ok", "duplicate", "conflict", "error"} {
		m[o] = metric.WithAttributeSet(attribute.NewSet(telemetry.OutcomeKey.String(o)))
	}
	return m
}()

func outcomeAttrs(outcome string) metric.MeasurementOption {
	if o, ok := outcomes[outcome]; ok {
		return o
	}
	return metric.WithAttributes(telemetry.OutcomeKey.String(outcome))
}

func (s *Store) msgID(e *session.Entry) string { return s.msgIDPrefix + e.ID }

// subject is where the store publishes an entry of type typ.
func (s *Store) subject(typ session.EntryType) string {
	if !s.b.cfg.typed {
		return s.subject1 // one subject per session (and node)
	}
	return s.b.cfg.subject(s.id, string(typ))
}

// producerSpan is an append's span kind, made once.
var producerSpan = trace.WithSpanKind(trace.SpanKindProducer)

func (s *Store) appendAttributes(entries []*session.Entry) []attribute.KeyValue {
	first := entries[0]
	kv := telemetry.Messaging(telemetry.OpSend, s.subject(first.Type), s.msgID(first))
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
	// Secrets are redacted, then offloaded content is stored before the
	// entries naming it; the caller's entries are left as they are but
	// for their parents (a rebase or FollowLeaf moves them), copied back
	// at the end.
	orig := entries
	entries, err := s.b.redact(entries)
	if err != nil {
		return fmt.Errorf("stream: append to %s: %w", s.id, err)
	}
	kept, err := s.keepsLocal(ctx)
	if err != nil {
		return err
	}
	store := s.blobsFor(kept)
	entries, err = store.Offload(ctx, entries, s.b.cfg.OffloadThreshold)
	if err != nil {
		return fmt.Errorf("stream: append to %s: %w", s.id, err)
	}
	defer func() {
		for i := range orig {
			// A caller's entry stored as it is, not a copy, is the tree's
			// now (a snapshot may be reading it): it has its parent.
			if orig[i] != nil && orig[i] != entries[i] {
				orig[i].ParentID = entries[i].ParentID
			}
		}
	}()
	if groupable(ctx, opts, entries) {
		return s.appendGrouped(ctx, span, store, entries, opts, outcome)
	}
	return s.write(ctx, func(w writer) error {
		err := s.appendLocked(ctx, span, w, store, entries, opts, outcome)
		if err == nil && opts.storedAt != nil {
			*opts.storedAt = s.lastSeq
		}
		return err
	})
}

// appendLocked is appendWith as the store's writer.
func (s *Store) appendLocked(ctx context.Context, span trace.Span, w writer, store *blobs.Store, entries []*session.Entry, opts AppendOptions, outcome *string) error {
	t := w.t // read freely; changed only through w.commit
	if err := s.completeFor(ctx, w, entries); err != nil {
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
		if err := s.catchUpWithLeader(ctx, w); err != nil {
			return err
		}
		if err := s.completeFor(ctx, w, entries); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		if opts.IfSequence != 0 && s.lastSeq != opts.IfSequence {
			*outcome = "conflict"
			return &session.ConflictError{Leaf: t.Leaf(), Sequence: s.lastSeq}
		}
		if err := t.CheckBatch(ctx, entries); err != nil {
			return err
		}
		msgs, err := s.prepare(ctx, store, entries)
		if err != nil {
			return err
		}
		sentAt := sinceStart()
		if span.IsRecording() {
			span.AddEvent("sessionlog.publish")
		}
		seq, dup, err := s.publish(ctx, msgs, s.resent(span))
		if span.IsRecording() {
			told := "stored"
			switch {
			case err != nil:
				told = err.Error()
			case dup:
				told = "duplicate"
			}
			span.AddEvent("sessionlog.published", trace.WithAttributes(attribute.String("outcome", told)))
		}
		if err == nil && !dup {
			return s.applyStored(w, entries, seq, sentAt)
		}
		if err != nil && !jsx.IsWrongLastSeq(err) && !jsx.Ambiguous(err) && !isBatchSeen(err) {
			*outcome = "error"
			return fmt.Errorf("stream: append to %s: %w", s.id, err)
		}
		// Someone else wrote, or we cannot tell whether we did: read
		// what the stream holds now.
		if err != nil && jsx.Ambiguous(err) {
			span.AddEvent("sessionlog.ambiguous", trace.WithAttributes(attribute.String("error", err.Error())))
		}
		oldLeaf, sent, held := t.Leaf(), s.lastSeq, t.Len()
		caughtFrom := time.Now()
		if cerr := s.catchUpPast(ctx, w, sent, jsx.IsWrongLastSeq(err) || isBatchSeen(err)); cerr != nil {
			*outcome = "error"
			return errors.Join(err, cerr)
		}
		if span.IsRecording() {
			// The catch-up (a read barrier, then reads) is most of a
			// conflict's cost, and all of it while a leader is elected.
			span.AddEvent("sessionlog.caughtup", trace.WithAttributes(attribute.String("took", time.Since(caughtFrom).Round(time.Millisecond).String()),
				attribute.Int64("from", int64(sent)), attribute.Int64("to", int64(s.lastSeq))))
		}
		if cerr := s.completeFor(ctx, w, entries); cerr != nil {
			*outcome = "error"
			return errors.Join(err, cerr)
		}
		if stored(t, entries) {
			*outcome = "duplicate"
			return nil
		}
		if err != nil && !jsx.IsWrongLastSeq(err) {
			*outcome = "error"
			return fmt.Errorf("stream: append to %s: %w", s.id, err)
		}
		retry, resolution := false, "returned"
		switch {
		case attempt >= maxRebases:
		case jsx.IsWrongLastSeq(err) && s.lastSeq == sent:
			// The write that failed our check never took: send ours again.
			retry, resolution = true, "resent"
		case jsx.IsWrongLastSeq(err) && t.Len() == held && t.Leaf() == oldLeaf:
			// What came meanwhile were copies of messages the session
			// holds (a stream source's, on an edge node): nothing to
			// conflict with.
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
}

// prepare makes the messages of checked entries: their blobs named (a
// wait for the writer's turn, or a conflict, may have outlasted what
// Ensure promised: cheap when it did not) and the entries encoded.
func (s *Store) prepare(ctx context.Context, store *blobs.Store, entries []*session.Entry) ([]*nats.Msg, error) {
	names, err := store.EnsureNamed(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("stream: append to %s: %w", s.id, err)
	}
	return s.messages(ctx, entries, names)
}

// applyStored applies checked entries the stream stored at seq, sent at
// sentAt, to the writer's tree.
func (s *Store) applyStored(w writer, entries []*session.Entry, seq uint64, sentAt time.Duration) error {
	err := w.commit(func(t *session.Tree) error {
		// Checked before they were sent, and only this writer changes t.
		if err := t.ApplyCheckedFrom(s.b.cfg.Origin, entries); err != nil {
			return err
		}
		s.applied(entries)
		s.lastSeq = seq
		return nil
	})
	if err != nil {
		return fmt.Errorf("stream: append to %s: stored at %d, but not applied to the open session: %w", s.id, seq, err)
	}
	// Stored behind its sequence check: the session held nothing else when
	// it was, so the store misses no write acknowledged before it was sent.
	s.fresh(sentAt)
	s.idx.touch(w.t.Info(), seq)
	return nil
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
// for the old one; entries aimed elsewhere are never re-parented: that
// would change what they mean (nor are moves: see decide).
func rebase(t *session.Tree, entries []*session.Entry, oldLeaf string) bool {
	first := entries[0]
	if first.ParentID != oldLeaf || t.Leaf() == oldLeaf {
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

// messages are the entries' messages to publish; named[i] is what entry
// i's blobs.Header lists.
func (s *Store) messages(ctx context.Context, entries []*session.Entry, named []string) ([]*nats.Msg, error) {
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
		m := nats.NewMsg(s.subject(e.Type))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, s.msgID(e))
		if named != nil && named[i] != "" {
			m.Header.Set(blobs.Header, named[i])
		}
		if s.b.cfg.Origin != "" {
			m.Header.Set(OriginHeader, s.b.cfg.Origin)
		}
		// Consumers of the entry continue the writer's trace.
		s.b.tel.Inject(ctx, m.Header)
		msgs[i] = m
	}
	return msgs, nil
}

// resent is publish's onResend for an append traced as span: each resend
// an event, with the error that caused it and the server then connected.
func (s *Store) resent(span trace.Span) func(error) {
	return func(err error) {
		span.AddEvent("sessionlog.resend", trace.WithAttributes(attribute.String("error", err.Error()), attribute.String("server", s.b.nc.ConnectedServerName())))
	}
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
	subjects := s.subjects
	span := trace.SpanFromContext(ctx)
	start := time.Now()
	defer func() {
		if err == nil && !dup {
			s.b.costs.learn(len(msgs), time.Since(start))
		}
	}()
	err = s.b.rq.Resend(ctx, func(ctx context.Context) (err error) {
		if span.IsRecording() {
			// An attempt is bounded by AttemptTimeout: one that took
			// longer says the bound did not hold, and by how much.
			t0 := time.Now()
			defer func() {
				if took := time.Since(t0); took > s.b.cfg.AttemptTimeout+100*time.Millisecond {
					msg := "ok"
					if err != nil {
						msg = err.Error()
					}
					span.AddEvent("sessionlog.attempt.overran", trace.WithAttributes(attribute.String("took", took.Round(time.Millisecond).String()), attribute.String("outcome", msg)))
				}
			}()
		}
		send := func() (err error) {
			if len(msgs) == 1 {
				ack, err := s.b.js.PublishMsg(ctx, msgs[0], jetstream.WithExpectLastSequenceForSubject(s.lastSeq, subjects), jsx.NoRetry)
				if err == nil {
					seq, dup = ack.Sequence, ack.Duplicate
				}
				return err
			}
			msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(s.lastSeq))
			msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, subjects)
			seq, err = s.b.publishBatch(ctx, msgs)
			return err
		}
		if s.b.sendHook != nil {
			return s.b.sendHook(msgs, send)
		}
		return send()
	}, onResend)
	return seq, dup, err
}

// publishBatch publishes msgs as one atomic batch and returns the last
// one's sequence.
func (b *Backend) publishBatch(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
	if b.batchHook != nil {
		return b.batchHook(ctx, msgs)
	}
	// No flow-control ack on the first message: a batch is at most
	// MaxBatch entries the server takes whole, and the ack costs a round
	// trip.
	ack, err := jetstreamext.PublishMsgBatch(ctx, b.js, msgs, jetstreamext.BatchFlowControl{AckFirst: false})
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// redact returns entries with their secrets replaced (the same slice when
// the deployment does not redact or nothing was found; a copy otherwise).
func (b *Backend) redact(entries []*session.Entry) ([]*session.Entry, error) {
	if b.redactor == nil {
		return entries, nil
	}
	var out []*session.Entry
	for i, e := range entries {
		if e == nil {
			continue
		}
		red, counts, err := b.redactor.RedactEntry(e)
		if err != nil {
			return nil, err
		}
		if counts == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(entries)
		}
		out[i] = red
		for kind, n := range counts {
			b.tel.Redactions.Add(context.Background(), int64(n), metric.WithAttributes(telemetry.RedactKindKey.String(kind)))
		}
	}
	if out == nil {
		return entries, nil
	}
	return out, nil
}
