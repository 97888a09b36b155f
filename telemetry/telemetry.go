package telemetry

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of every span and instrument.
const Name = "github.com/agentcore/sessionlog"

// Attribute keys of sessionlog's own.
const (
	SessionKey  = attribute.Key("sessionlog.session.id")
	StreamKey   = attribute.Key("sessionlog.stream")
	SequenceKey = attribute.Key("sessionlog.sequence")
	EntryKey    = attribute.Key("sessionlog.entry.type")
	EntriesKey  = attribute.Key("sessionlog.entries")
	OutcomeKey  = attribute.Key("sessionlog.outcome")
	SourceKey   = attribute.Key("sessionlog.source")
	OpKey       = attribute.Key("sessionlog.op")
	CodeKey     = attribute.Key("sessionlog.error.code")
	TenantKey   = attribute.Key("sessionlog.tenant")
)

// MessagingNATS is messaging.system for NATS (not among semconv's
// enumerated values).
var MessagingNATS = semconv.MessagingSystemKey.String("nats")

// T is a set of instruments from one tracer and meter provider.
type T struct {
	Tracer trace.Tracer
	Meter  metric.Meter
	prop   propagation.TextMapPropagator

	// AppendDuration times Store appends, by outcome.
	AppendDuration metric.Float64Histogram
	// Appends counts appends by outcome: ok, duplicate (a retry of a
	// stored append), conflict, error.
	Appends metric.Int64Counter
	// Conflicts counts sequence-check failures by resolution: returned,
	// rebased, retried.
	Conflicts metric.Int64Counter
	// RebuildDuration times building a tree (opening a store, a replica
	// loading a session), by source: snapshot or stream.
	RebuildDuration metric.Float64Histogram
	// SnapshotDuration times snapshot writes and loads, by outcome/op.
	SnapshotDuration metric.Float64Histogram
	// EventsHandled counts event-handler runs by outcome; Redeliveries
	// the deliveries after the first; DeadLetters events given up on.
	EventsHandled metric.Int64Counter
	Redeliveries  metric.Int64Counter
	DeadLetters   metric.Int64Counter
	// RequestDuration times service requests by op and error code.
	RequestDuration metric.Float64Histogram
	// TrackerLag and TrackerApplied are observed from each running
	// tracker; CacheSize from trackers and services (attribute
	// sessionlog.cache: replica or service). The metrics of trackers keep
	// the names ("sessionlog.replica.*", cache "replica") they had before
	// the package was named tracker: dashboards read them.
	TrackerLag     metric.Int64ObservableGauge
	TrackerApplied metric.Int64ObservableGauge
	CacheSize      metric.Int64ObservableGauge
	// Blobs counts what happens to content stored apart, by op: put (a
	// new blob), exists (already stored), touch (kept from collection),
	// get (read from the object store), hit (read from the cache),
	// collect (deleted); BlobBytes the bytes put and got.
	Blobs     metric.Int64Counter
	BlobBytes metric.Int64Counter
	// Redactions counts secrets replaced on write, by kind (RedactKindKey).
	Redactions metric.Int64Counter
	// Retention counts the sessions scheduled retention handled, by
	// outcome (OutcomeKey: archived, deleted, kept).
	Retention metric.Int64Counter
	// ReplicaRepairs counts repairs of stuck or dead stream replicas, by
	// stream, action (stepdown, peer-remove) and outcome (ok, refused).
	ReplicaRepairs metric.Int64Counter

	// The deployment's health, observed by a node from JetStream's API
	// (see stream.Backend.Health), by stream (StreamKey): messages and
	// bytes; whether it has a leader (1, or 0 while none is elected);
	// its followers by state (StateKey: current, behind, offline) and the
	// most operations any is behind; each durable consumer's pending
	// messages (ConsumerKey); the account's stored bytes and limit; and
	// how many warnings the health report holds.
	StreamMessages, StreamBytes, StreamLeader metric.Int64ObservableGauge
	StreamFollowers, FollowerLag              metric.Int64ObservableGauge
	ConsumerPending                           metric.Int64ObservableGauge
	AccountStore, AccountStoreLimit, Warnings metric.Int64ObservableGauge
	// DiskFree and DiskSize are the space free and the size of the file
	// system the node stores its data on (issue 69: a full disk refuses
	// writes).
	DiskFree, DiskSize metric.Int64ObservableGauge
}

// StateKey is a follower's state in a StreamFollowers observation.
const StateKey = attribute.Key("sessionlog.state")

// ConsumerKey names the consumer of a ConsumerPending observation.
const ConsumerKey = attribute.Key("sessionlog.consumer")

// RedactKindKey tells which rule a Redactions observation counts.
const RedactKindKey = attribute.Key("sessionlog.redaction.kind")

// BlobOpKey tells what a Blobs observation counts.
const BlobOpKey = attribute.Key("sessionlog.blob.op")

// CacheKey tells which cache a CacheSize observation is of.
const CacheKey = attribute.Key("sessionlog.cache")

// Default uses the global tracer and meter providers and propagator.
func Default() *T {
	return New(otel.GetTracerProvider(), otel.GetMeterProvider(), nil)
}

// New makes the instruments from tp and mp. prop defaults to W3C trace
// context and baggage.
func New(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) *T {
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	m := mp.Meter(Name)
	t := &T{Tracer: tp.Tracer(Name), Meter: m, prop: prop}
	// Instrument creation only fails on invalid names, which are fixed
	// here: a failure would return a no-op instrument, never nil.
	secs := metric.WithUnit("s")
	buckets := metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
	t.AppendDuration, _ = m.Float64Histogram("sessionlog.append.duration", secs, buckets, metric.WithDescription("Duration of appends to a session, by outcome."))
	t.Appends, _ = m.Int64Counter("sessionlog.appends", metric.WithDescription("Appends by outcome: ok, duplicate, conflict, error."))
	t.Conflicts, _ = m.Int64Counter("sessionlog.append.conflicts", metric.WithDescription("Failed sequence checks by resolution: returned, rebased, retried."))
	t.RebuildDuration, _ = m.Float64Histogram("sessionlog.rebuild.duration", secs, buckets, metric.WithDescription("Duration of building a session tree, by source: snapshot or stream."))
	t.SnapshotDuration, _ = m.Float64Histogram("sessionlog.snapshot.duration", secs, buckets, metric.WithDescription("Duration of snapshot writes and loads."))
	t.EventsHandled, _ = m.Int64Counter("sessionlog.events.handled", metric.WithDescription("Event handler runs by outcome: ok, error."))
	t.Redeliveries, _ = m.Int64Counter("sessionlog.events.redeliveries", metric.WithDescription("Events delivered again after a failed or unfinished run."))
	t.DeadLetters, _ = m.Int64Counter("sessionlog.events.dead_letters", metric.WithDescription("Events sent to the dead-letter stream."))
	t.RequestDuration, _ = m.Float64Histogram("sessionlog.service.duration", secs, buckets, metric.WithDescription("Duration of service requests, by op and error code."))
	t.TrackerLag, _ = m.Int64ObservableGauge("sessionlog.replica.lag", metric.WithUnit("{message}"), metric.WithDescription("Messages of the followed subjects still pending when a tracker took the last one."))
	t.TrackerApplied, _ = m.Int64ObservableGauge("sessionlog.replica.applied_sequence", metric.WithDescription("Stream sequence a tracker has applied."))
	t.CacheSize, _ = m.Int64ObservableGauge("sessionlog.cache.sessions", metric.WithUnit("{session}"), metric.WithDescription("Sessions held in memory, by cache."))
	t.Blobs, _ = m.Int64Counter("sessionlog.blobs", metric.WithUnit("{blob}"), metric.WithDescription("Content stored apart, by op: put, exists, touch, get, hit, collect."))
	t.BlobBytes, _ = m.Int64Counter("sessionlog.blobs.bytes", metric.WithUnit("By"), metric.WithDescription("Bytes of blobs put, got and collected, by op."))
	t.Retention, _ = m.Int64Counter("sessionlog.retention.sessions", metric.WithUnit("{session}"), metric.WithDescription("Sessions scheduled retention handled, by outcome: archived (and deleted), deleted, kept."))
	t.ReplicaRepairs, _ = m.Int64Counter("sessionlog.replica.repairs", metric.WithUnit("{repair}"), metric.WithDescription("Repairs of stream replicas that stopped catching up by themselves, by stream, action (stepdown, peer-remove) and outcome (ok, refused)."))
	t.Redactions, _ = m.Int64Counter("sessionlog.redactions", metric.WithUnit("{secret}"), metric.WithDescription("Secrets replaced in entries before they were stored, by kind."))
	t.StreamMessages, _ = m.Int64ObservableGauge("sessionlog.stream.messages", metric.WithUnit("{message}"), metric.WithDescription("Messages in each stream of the deployment."))
	t.StreamBytes, _ = m.Int64ObservableGauge("sessionlog.stream.size", metric.WithUnit("By"), metric.WithDescription("Bytes in each stream of the deployment."))
	t.StreamLeader, _ = m.Int64ObservableGauge("sessionlog.stream.leader", metric.WithDescription("1 when the stream has a leader (or is not clustered), 0 while one is elected."))
	t.StreamFollowers, _ = m.Int64ObservableGauge("sessionlog.stream.followers", metric.WithUnit("{server}"), metric.WithDescription("A stream's followers by state: current, behind, offline."))
	t.FollowerLag, _ = m.Int64ObservableGauge("sessionlog.stream.follower_lag", metric.WithUnit("{operation}"), metric.WithDescription("Operations the furthest follower of a stream is behind its leader."))
	t.ConsumerPending, _ = m.Int64ObservableGauge("sessionlog.consumer.pending", metric.WithUnit("{message}"), metric.WithDescription("Messages a durable consumer has not been delivered yet."))
	t.AccountStore, _ = m.Int64ObservableGauge("sessionlog.account.stored", metric.WithUnit("By"), metric.WithDescription("Bytes the account stores in JetStream."))
	t.AccountStoreLimit, _ = m.Int64ObservableGauge("sessionlog.account.store_limit", metric.WithUnit("By"), metric.WithDescription("The account's JetStream storage limit (0: none)."))
	t.DiskFree, _ = m.Int64ObservableGauge("sessionlog.disk.free", metric.WithUnit("By"), metric.WithDescription("Bytes free on the file system the node stores its data on."))
	t.DiskSize, _ = m.Int64ObservableGauge("sessionlog.disk.size", metric.WithUnit("By"), metric.WithDescription("Size of the file system the node stores its data on."))
	t.Warnings, _ = m.Int64ObservableGauge("sessionlog.health.warnings", metric.WithUnit("{warning}"), metric.WithDescription("Warnings of the deployment's health report (see sessionlog status)."))
	return t
}

// Zero records nothing for every counter an alert or dashboard reads, so
// that each series exists from the start (a rate over a missing series is
// no data, not zero): appends by outcome, conflicts by resolution, blobs
// by op, retention by outcome.
func (t *T) Zero(ctx context.Context) {
	for _, o := range []string{"ok", "duplicate", "conflict", "error"} {
		t.Appends.Add(ctx, 0, metric.WithAttributes(OutcomeKey.String(o)))
	}
	for _, r := range []string{"returned", "rebased", "retried", "resent"} {
		t.Conflicts.Add(ctx, 0, metric.WithAttributes(attribute.String("resolution", r)))
	}
	for _, op := range []string{"put", "exists", "touch", "get", "hit", "collect"} {
		t.Blobs.Add(ctx, 0, metric.WithAttributes(BlobOpKey.String(op)))
		t.BlobBytes.Add(ctx, 0, metric.WithAttributes(BlobOpKey.String(op)))
	}
	for _, o := range []string{"archived", "deleted", "kept"} {
		t.Retention.Add(ctx, 0, metric.WithAttributes(OutcomeKey.String(o)))
	}
}

// Seconds is the time since start, for histograms.
func Seconds(start time.Time) float64 { return time.Since(start).Seconds() }

// headerCarrier reads and writes NATS headers as they are: NATS header
// names are case-sensitive, and W3C's are lowercase (traceparent,
// tracestate, baggage).
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes ctx's trace context into h (which must not be nil).
func (t *T) Inject(ctx context.Context, h nats.Header) {
	t.prop.Inject(ctx, headerCarrier(h))
}

// Extract returns ctx with the trace context carried in h.
func (t *T) Extract(ctx context.Context, h nats.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return t.prop.Extract(ctx, headerCarrier(h))
}

// Propagator is the propagator in use (the gateway carries HTTP headers
// with it).
func (t *T) Propagator() propagation.TextMapPropagator { return t.prop }

// Messaging returns the semantic-convention attributes of a message.
func Messaging(op attribute.KeyValue, subject, msgID string) []attribute.KeyValue {
	kv := []attribute.KeyValue{MessagingNATS, op, semconv.MessagingDestinationName(subject)}
	if msgID != "" {
		kv = append(kv, semconv.MessagingMessageID(msgID))
	}
	return kv
}

// The operation types used.
var (
	OpSend    = semconv.MessagingOperationTypeSend
	OpProcess = semconv.MessagingOperationTypeProcess
)
