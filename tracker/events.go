package tracker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

// EventConfig configures a durable subscription to entries by type across
// all sessions.
type EventConfig struct {
	// Durable names the consumer: its position survives restarts, and
	// processes subscribing with the same name share the work.
	Durable string
	// Types are the entry types delivered (at least one).
	Types []session.EntryType
	// MaxDeliver is how many times an entry is tried before it goes to
	// the dead-letter stream.
	MaxDeliver int
	// AckWait is how long a delivery may go unanswered (a crashed
	// handler) before it is delivered again.
	AckWait time.Duration
	// Backoff is the delay before redelivering after a handler error,
	// doubled per attempt up to AckWait.
	Backoff time.Duration
	// Refs delivers entries as stored: content stored apart (see
	// session.BlobRef) stays a reference, for the handler to fetch if it
	// needs it (Backend.Blobs). By default the content is in place.
	Refs bool
	// Start is where a new durable begins: every entry stored
	// (DeliverAllPolicy, the zero value), only those stored from now on
	// (DeliverNewPolicy), from a stream sequence (StartSeq) or a time
	// (StartTime). A durable that exists goes on where it stopped.
	Start     jetstream.DeliverPolicy
	StartSeq  uint64
	StartTime time.Time
}

// DefaultEventConfig delivers entries of the given types to durable.
func DefaultEventConfig(durable string, types ...session.EntryType) EventConfig {
	return EventConfig{Durable: durable, Types: types, MaxDeliver: 5, AckWait: 30 * time.Second, Backoff: time.Second}
}

// Validate checks the config.
func (c EventConfig) Validate() error {
	if err := session.ValidateSessionID(c.Durable); err != nil {
		return fmt.Errorf("%w: durable name %q: letters, digits, '-', '_'", ErrInvalidConfig, c.Durable)
	}
	if len(c.Types) == 0 {
		return fmt.Errorf("%w: no entry types", ErrInvalidConfig)
	}
	for _, t := range c.Types {
		if err := session.ValidateSessionID(string(t)); err != nil {
			return fmt.Errorf("%w: entry type %q", ErrInvalidConfig, t)
		}
	}
	switch {
	case c.MaxDeliver < 1:
		return fmt.Errorf("%w: MaxDeliver must be at least 1", ErrInvalidConfig)
	case c.AckWait < time.Second:
		return fmt.Errorf("%w: AckWait must be at least a second", ErrInvalidConfig)
	case c.Backoff <= 0:
		return fmt.Errorf("%w: Backoff must be positive", ErrInvalidConfig)
	}
	return nil
}

// Event is one delivered entry.
type Event struct {
	Session string
	Seq     uint64
	Entry   *session.Entry
	// Delivery counts deliveries of this entry, 1 the first time.
	Delivery int
	// Redactions is how many secrets were replaced in the entry before
	// it was stored (session.CountRedactions; deployments that redact).
	Redactions int
}

// Handler handles an event. Returning nil acknowledges it; an error has it
// delivered again, and after MaxDeliver tries sent to the dead-letter
// stream. It must honour ctx, which ends when the subscription closes.
type Handler func(ctx context.Context, ev Event) error

// EventStatus counts what a subscription did.
type EventStatus struct {
	Handled      int // acknowledged
	Failed       int // handler errors
	Redeliveries int // deliveries after the first
	DeadLettered int // sent to the dead-letter stream
	LastError    error
}

// Dead-letter headers: where the entry came from and why it gave up.
const (
	HeaderOrigSubject = "Sessionlog-Orig-Subject"
	HeaderOrigStream  = "Sessionlog-Orig-Stream"
	HeaderOrigSeq     = "Sessionlog-Orig-Seq"
	HeaderConsumer    = "Sessionlog-Consumer"
	HeaderDeliveries  = "Sessionlog-Deliveries"
	HeaderError       = "Sessionlog-Error"
)

// DeadLetterSubject is where a consumer's dead letters go, in the stream
// named by DeadLetterStream.
func DeadLetterSubject(b *stream.Backend, durable string) string {
	return b.Config().Prefix + "-dlq." + durable
}

// DeadLetterSubjects are the subjects of every dead letter of a stream's
// event consumers.
func DeadLetterSubjects(sc stream.Config) string { return sc.Prefix + "-dlq.>" }

// DeadLetterStream names the dead-letter stream of a backend.
func DeadLetterStream(b *stream.Backend) string { return b.Config().Stream + "_DLQ" }

// EnsureDeadLetters creates the dead-letter stream of b's event consumers
// if it is missing, and checks an existing one holds only dead letters.
// A served account has it from the start (sessionlog serve creates it):
// tenant users, who may not create or change streams, only look it up.
func EnsureDeadLetters(ctx context.Context, b *stream.Backend) error {
	js := b.JetStream()
	name, subj := DeadLetterStream(b), DeadLetterSubjects(b.Config())
	var s jetstream.Stream
	err := stream.Provisioning(ctx, func(ctx context.Context) (err error) {
		if s, err = js.Stream(ctx, name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:     name,
			Subjects: []string{subj},
			Storage:  jetstream.FileStorage,
			Replicas: b.Config().Replicas,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = js.Stream(ctx, name)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("tracker: dead-letter stream: %w", err)
	}
	if got := s.CachedInfo().Config.Subjects; len(got) != 1 || got[0] != subj {
		return fmt.Errorf("tracker: dead-letter stream %s takes subjects %v, not only %s: refusing to use it", name, got, subj)
	}
	return nil
}

// Subscription is a running event consumer: a durable consumer of the
// same name on each partition's stream, one goroutine pulling from each.
// Its handler is called for one event at a time.
//
// Lock order: handling, held across a handler call (which may do I/O: it
// is the handler's), then mu, a leaf guarding status and closed, held for
// no request.
type Subscription struct {
	b      *stream.Backend
	cfg    EventConfig
	its    []jetstream.MessagesContext
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// handling makes handler calls one at a time across partitions.
	handling sync.Mutex

	mu     sync.Mutex
	status EventStatus
	closed bool
}

// Subscribe creates (or resumes) the durable consumer and starts handling.
func Subscribe(ctx context.Context, b *stream.Backend, cfg EventConfig, h Handler) (*Subscription, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := EnsureDeadLetters(ctx, b); err != nil {
		return nil, err
	}
	var its []jetstream.MessagesContext
	var filters []stream.TypeFilter
	stop := func() {
		for _, it := range its {
			it.Stop()
		}
	}
	for _, p := range b.Partitions() {
		filter := p.TypeFilter(cfg.Types...)
		cc := jetstream.ConsumerConfig{
			Durable:        cfg.Durable,
			Description:    "sessionlog event consumer",
			FilterSubjects: filter.Subjects,
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        cfg.AckWait,
			MaxDeliver:     -1, // dead letters are ours to route, not the server's to drop
			MaxAckPending:  1000,
		}
		// Where it starts is the durable's own once it exists: the
		// server refuses to change it, and its position is what counts.
		if old, err := p.Stream().Consumer(ctx, cfg.Durable); err == nil {
			oc := old.CachedInfo().Config
			cc.DeliverPolicy, cc.OptStartSeq, cc.OptStartTime = oc.DeliverPolicy, oc.OptStartSeq, oc.OptStartTime
		} else {
			cc.DeliverPolicy = cfg.Start
			switch cfg.Start {
			case jetstream.DeliverByStartSequencePolicy:
				cc.OptStartSeq = cfg.StartSeq
			case jetstream.DeliverByStartTimePolicy:
				t := cfg.StartTime
				cc.OptStartTime = &t
			}
		}
		cons, err := p.Stream().CreateOrUpdateConsumer(ctx, cc)
		if err != nil {
			stop()
			return nil, fmt.Errorf("tracker: consumer %s: %w", cfg.Durable, err)
		}
		it, err := cons.Messages()
		if err != nil {
			stop()
			return nil, fmt.Errorf("tracker: consumer %s: %w", cfg.Durable, err)
		}
		its, filters = append(its, it), append(filters, filter)
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Subscription{b: b, cfg: cfg, its: its, cancel: cancel}
	for i, it := range its {
		s.wg.Add(1)
		go s.run(sctx, it, filters[i], h)
	}
	return s, nil
}

func (s *Subscription) run(ctx context.Context, it jetstream.MessagesContext, filter stream.TypeFilter, h Handler) {
	defer s.wg.Done()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			s.note(func(st *EventStatus) { st.LastError = err })
			continue // heartbeats missed: the iterator re-pulls
		}
		s.handling.Lock()
		s.handle(ctx, msg, filter, h)
		s.handling.Unlock()
	}
}

func (s *Subscription) handle(ctx context.Context, msg jetstream.Msg, filter stream.TypeFilter, h Handler) {
	meta, err := msg.Metadata()
	if err != nil {
		s.note(func(st *EventStatus) { st.LastError = err })
		return
	}
	delivery := int(meta.NumDelivered)
	tel := s.b.Telemetry()
	if delivery > 1 {
		s.note(func(st *EventStatus) { st.Redeliveries++ })
		tel.Redeliveries.Add(ctx, 1, metric.WithAttributes(semconv.MessagingConsumerGroupName(s.cfg.Durable)))
	}
	// Where a session is one subject, the consumer takes in its headers
	// and entries of every type: those not of ours are acknowledged
	// unread beyond their type.
	if !filter.Keep(msg.Subject(), msg.Data()) {
		_ = msg.Ack()
		return
	}
	m, err := s.b.Decode(msg.Subject(), msg.Data(), meta.Sequence.Stream)
	if err == nil && m.Entry == nil {
		err = fmt.Errorf("tracker: %s is not an entry", msg.Subject())
	}
	// The handler runs in the trace of the append that wrote the entry:
	// its span is a child of the writer's, and linked to it as messaging
	// conventions ask.
	typ := "undecodable"
	if err == nil {
		typ = string(m.Entry.Type)
	}
	ctx, span := s.startSpan(ctx, msg, meta, delivery, typ)
	defer span.End()
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		s.deadLetter(ctx, msg, meta, delivery, err) // it will never decode
		return
	}
	start := time.Now()
	e := m.Entry
	if !s.cfg.Refs {
		e, err = s.b.Blobs().Resolve(ctx, e) // a failure is retried as a handler's
	}
	if err == nil {
		// Counted on the stored entry: a reference says how many its
		// content holds, so resolving changes nothing to count.
		err = h(ctx, Event{Session: m.Session, Seq: m.Seq, Entry: e, Delivery: delivery, Redactions: session.CountRedactions(m.Entry)})
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	tel.EventsHandled.Add(ctx, 1, metric.WithAttributes(telemetry.OutcomeKey.String(outcome), semconv.MessagingConsumerGroupName(s.cfg.Durable)))
	span.SetAttributes(telemetry.OutcomeKey.String(outcome), attribute.Float64("sessionlog.handler.seconds", telemetry.Seconds(start)))
	if ctx.Err() != nil {
		// Closing: given back at once for the next consumer of the
		// durable, rather than after AckWait.
		_ = msg.Nak()
		return
	}
	if err == nil {
		if aerr := msg.DoubleAck(ctx); aerr != nil {
			s.note(func(st *EventStatus) { st.LastError = aerr })
			return
		}
		s.note(func(st *EventStatus) { st.Handled++ })
		return
	}
	s.note(func(st *EventStatus) { st.Failed++; st.LastError = err })
	if delivery >= s.cfg.MaxDeliver {
		s.deadLetter(ctx, msg, meta, delivery, err)
		return
	}
	_ = msg.NakWithDelay(s.backoff(delivery))
}

// startSpan starts the consumer span of one delivery.
func (s *Subscription) startSpan(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, delivery int, typ string) (context.Context, trace.Span) {
	tel := s.b.Telemetry()
	producer := tel.Extract(ctx, nats.Header(msg.Headers()))
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	if sc := trace.SpanContextFromContext(producer); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := tel.Tracer.Start(producer, "sessionlog.event "+typ, opts...)
	if span.IsRecording() {
		span.SetAttributes(telemetry.Messaging(telemetry.OpProcess, msg.Subject(), msg.Headers().Get(jetstream.MsgIDHeader))...)
		if id, _, ok := strings.Cut(msg.Headers().Get(jetstream.MsgIDHeader), ":"); ok {
			span.SetAttributes(telemetry.SessionKey.String(id))
		}
		span.SetAttributes(semconv.MessagingConsumerGroupName(s.cfg.Durable), telemetry.StreamKey.String(meta.Stream),
			telemetry.SequenceKey.Int64(int64(meta.Sequence.Stream)), attribute.Int("sessionlog.delivery", delivery))
	}
	return ctx, span
}

func (s *Subscription) backoff(delivery int) time.Duration {
	d := s.cfg.Backoff << min(delivery-1, 20)
	return min(d, s.cfg.AckWait)
}

// deadLetter copies the message to the dead-letter stream, then ends its
// deliveries. If the copy fails it is delivered again later instead.
func (s *Subscription) deadLetter(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, delivery int, cause error) {
	dl := nats.NewMsg(DeadLetterSubject(s.b, s.cfg.Durable))
	dl.Data = msg.Data()
	dl.Header.Set(HeaderOrigSubject, msg.Subject())
	dl.Header.Set(HeaderOrigStream, meta.Stream)
	dl.Header.Set(HeaderOrigSeq, strconv.FormatUint(meta.Sequence.Stream, 10))
	dl.Header.Set(HeaderConsumer, s.cfg.Durable)
	dl.Header.Set(HeaderDeliveries, strconv.Itoa(delivery))
	dl.Header.Set(HeaderError, cause.Error())
	// One dead letter per entry and consumer, even if this is retried
	// (sequences are per partition: the stream is part of the id).
	dl.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s:%s:%d", s.cfg.Durable, meta.Stream, meta.Sequence.Stream))
	s.b.Telemetry().Inject(ctx, dl.Header)
	if _, err := s.b.JetStream().PublishMsg(ctx, dl); err != nil {
		s.note(func(st *EventStatus) { st.LastError = err })
		_ = msg.NakWithDelay(s.backoff(delivery))
		return
	}
	s.b.Telemetry().DeadLetters.Add(ctx, 1, metric.WithAttributes(semconv.MessagingConsumerGroupName(s.cfg.Durable)))
	trace.SpanFromContext(ctx).AddEvent("sessionlog.dead_letter", trace.WithAttributes(attribute.String("reason", cause.Error())))
	if err := msg.TermWithReason("dead-lettered"); err != nil {
		s.note(func(st *EventStatus) { st.LastError = err })
	}
	s.note(func(st *EventStatus) { st.DeadLettered++ })
}

func (s *Subscription) note(fn func(*EventStatus)) {
	s.mu.Lock()
	fn(&s.status)
	s.mu.Unlock()
}

// Status reports what the subscription did.
func (s *Subscription) Status() EventStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Close stops handling; an event being handled sees its ctx end and is
// left unacknowledged, to be delivered again. The durable consumer and its
// position stay. Idempotent.
func (s *Subscription) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	for _, it := range s.its {
		it.Stop()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tracker: close subscription: %w", ctx.Err())
	}
}
