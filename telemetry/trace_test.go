package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
	"github.com/agentcore/sessionlog/tracker"
)

var nc *nats.Conn

func TestMain(m *testing.M) {
	os.Exit(clustertest.RunWithNode("sessionlog-telemetry-test-", nil, func(_ *cluster.Node, c *nats.Conn) int {
		nc = c
		return m.Run()
	}))
}

// recorded is a stream backend whose telemetry goes to the SDK's
// in-memory recorder and a manual metric reader.
type recorded struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tel    *telemetry.T
	b      *stream.Backend
}

func record(t *testing.T, name string) *recorded {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	tel := telemetry.New(tp, mp, nil)
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = "TEL_"+name, "tel-"+strings.ToLower(name)
	b, err := stream.New(context.Background(), nc, cfg, stream.WithTelemetry(tel))
	if err != nil {
		t.Fatal(err)
	}
	return &recorded{spans: sr, reader: reader, tel: tel, b: b}
}

// span waits for a span of that name and returns the last one ended.
func (r *recorded) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		for _, s := range r.spans.Ended() {
			if s.Name() == name {
				found = s // the last one ended
			}
		}
		if found == nil {
			return fmt.Errorf("no span %q among %d", name, len(r.spans.Ended()))
		}
		return nil
	})
	return found
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// An agent's trace goes through the service request, the append and its
// message, and continues in the event consumer that reacts to the
// compaction: one trace, parent links across the NATS hop.
func TestTraceCrossesTheMessageHop(t *testing.T) {
	r := record(t, "HOP")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, svcCfg := servicetest.Start(t, nc, r.b, nil)
	client := api.NewClient(nc, svcCfg.Subject, api.WithPropagator(r.tel.Propagator()))

	handled := make(chan trace.SpanContext, 1)
	sub, err := tracker.Subscribe(ctx, r.b, tracker.DefaultEventConfig("tel-compactions", session.TypeCompaction), func(ctx context.Context, ev tracker.Event) error {
		handled <- trace.SpanContextFromContext(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(context.Background())

	// The agent's own span, as an instrumented agent would have.
	agentCtx, agent := r.tel.Tracer.Start(ctx, "agent turn")
	if err := client.Call(agentCtx, api.OpCreate, api.CreateRequest{ID: "hop"}, nil); err != nil {
		t.Fatal(err)
	}
	var a api.AppendReply
	if err := client.Call(agentCtx, api.OpAppend, api.AppendRequest{Session: "hop", Entries: []jsontext.Value{jsontext.Value(`{"type":"message","message":{"role":"user","content":"hi"}}`)}}, &a); err != nil {
		t.Fatal(err)
	}
	var c api.AppendReply
	comp := `{"type":"compaction","summary":"s","firstKeptEntryId":"` + a.Leaf + `","tokensBefore":10}`
	if err := client.Call(agentCtx, api.OpAppend, api.AppendRequest{Session: "hop", Entries: []jsontext.Value{jsontext.Value(comp)}}, &c); err != nil {
		t.Fatal(err)
	}
	agent.End()
	var consumer trace.SpanContext
	select {
	case consumer = <-handled:
	case <-ctx.Done():
		t.Fatal("compaction not handled")
	}
	traceID := agent.SpanContext().TraceID()

	// The raw message carries the trace in lowercase headers.
	msg, err := r.b.StreamOf("hop").GetMsg(ctx, c.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if tp := msg.Header["traceparent"]; len(tp) != 1 || !strings.Contains(tp[0], traceID.String()) {
		t.Fatalf("message headers %v lack a lowercase traceparent of trace %s", msg.Header, traceID)
	}

	var appendSpan sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == "sessionlog.append" && attrs(s)[telemetry.EntryKey].AsString() == "compaction" {
			appendSpan = s
		}
	}
	if appendSpan == nil {
		t.Fatal("no append span for the compaction")
	}
	a1 := attrs(appendSpan)
	want := map[attribute.Key]string{
		"messaging.system": "nats", "messaging.operation.type": "send",
		"messaging.destination.name": r.b.SessionSubjects("hop"),
		telemetry.SessionKey:         "hop", telemetry.StreamKey: "TEL_HOP", telemetry.OutcomeKey: "ok",
	}
	for k, v := range want {
		if a1[k].String() != v {
			t.Errorf("append span %s = %q, want %q", k, a1[k].String(), v)
		}
	}
	if id := a1["messaging.message.id"].AsString(); !strings.HasPrefix(id, "hop:") || !strings.HasSuffix(id, ":"+c.Leaf) {
		t.Errorf("messaging.message.id = %q", id)
	}
	if a1[telemetry.SequenceKey].AsInt64() != int64(c.Sequence) {
		t.Errorf("sequence attribute %d, want %d", a1[telemetry.SequenceKey].AsInt64(), c.Sequence)
	}
	if appendSpan.SpanKind() != trace.SpanKindProducer || appendSpan.SpanContext().TraceID() != traceID {
		t.Errorf("append span kind %v trace %s, want producer in %s", appendSpan.SpanKind(), appendSpan.SpanContext().TraceID(), traceID)
	}
	// The service span is its parent and the agent's child.
	server := parentOf(r, appendSpan)
	if server == nil || server.Name() != svcCfg.Subject+" append" || server.SpanKind() != trace.SpanKindServer || server.Parent().SpanID() != agent.SpanContext().SpanID() {
		t.Fatalf("append's parent = %v, want the service span under the agent span", server)
	}
	// The consumer continues the trace: child of the append span, and
	// linked to it.
	ev := r.span(t, "sessionlog.event compaction")
	if consumer.TraceID() != traceID || ev.Parent().SpanID() != appendSpan.SpanContext().SpanID() || ev.SpanKind() != trace.SpanKindConsumer {
		t.Fatalf("consumer span trace %s parent %s kind %v; want trace %s parent %s", consumer.TraceID(), ev.Parent().SpanID(), ev.SpanKind(), traceID, appendSpan.SpanContext().SpanID())
	}
	if len(ev.Links()) != 1 || ev.Links()[0].SpanContext.SpanID() != appendSpan.SpanContext().SpanID() {
		t.Fatalf("consumer links %v, want the append span", ev.Links())
	}
	ea := attrs(ev)
	if ea["messaging.operation.type"].AsString() != "process" || ea["messaging.consumer.group.name"].AsString() != "tel-compactions" || ea[telemetry.SessionKey].AsString() != "hop" || ea[telemetry.SequenceKey].AsInt64() != int64(c.Sequence) {
		t.Fatalf("consumer attributes %v", ea)
	}

	// Context builds are spans of their own under the request.
	if err := client.Call(ctx, api.OpContext, api.ContextRequest{Session: "hop"}, nil); err != nil {
		t.Fatal(err)
	}
	cb := r.span(t, "sessionlog.context.build")
	if p := parentOf(r, cb); p == nil || p.Name() != svcCfg.Subject+" context" {
		t.Fatalf("context build's parent: %v", p)
	}
}

func parentOf(r *recorded, s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	for _, p := range r.spans.Ended() {
		if p.SpanContext().SpanID() == s.Parent().SpanID() {
			return p
		}
	}
	return nil
}

// Conflicts are events of the append span with their resolution; opens
// and snapshots have spans of their own.
func TestAppendConflictEventsAndOpenSpans(t *testing.T) {
	r := record(t, "CONFLICT")
	ctx := context.Background()
	h := sessiontest.TestHeader("c")
	a, err := r.b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := r.b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	msg := func(id, parent string) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:00.000Z",
			Message: &session.Message{Role: "user", Timestamp: 1, Content: session.TextContent(id)}}
	}
	if err := a.Append(ctx, msg("r", "")); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendWith(ctx, []*session.Entry{msg("x", "")}, stream.AppendOptions{Policy: stream.ReturnConflict}); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("want a conflict, got %v", err)
	}
	if err := a.Append(ctx, msg("r2", "r")); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendWith(ctx, []*session.Entry{msg("y", "r")}, stream.AppendOptions{Policy: stream.Rebase}); err != nil {
		t.Fatal(err)
	}
	resolutions := map[string]int{}
	outcomes := map[string]int{}
	for _, s := range r.spans.Ended() {
		if s.Name() != "sessionlog.append" {
			continue
		}
		outcomes[attrs(s)[telemetry.OutcomeKey].AsString()]++
		for _, e := range s.Events() {
			if e.Name == "sessionlog.conflict" {
				for _, kv := range e.Attributes {
					if kv.Key == "resolution" {
						resolutions[kv.Value.AsString()]++
					}
				}
			}
		}
	}
	if resolutions["returned"] != 1 || resolutions["rebased"] != 1 || outcomes["conflict"] != 1 || outcomes["ok"] != 3 {
		t.Fatalf("conflict events %v, outcomes %v", resolutions, outcomes)
	}
	if err := a.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.b.OpenStore(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	open := r.span(t, "sessionlog.open")
	if attrs(open)[telemetry.SourceKey].AsString() != "snapshot" {
		t.Fatalf("open attributes %v", attrs(open))
	}
	if w := r.span(t, "sessionlog.snapshot.write"); attrs(w)[telemetry.OutcomeKey].AsString() != "ok" {
		t.Fatalf("snapshot write %v", attrs(w))
	}
	r.span(t, "sessionlog.snapshot.load")

	rm := collect(t, r)
	if got := sumOf(rm, "sessionlog.appends", "sessionlog.outcome", "ok"); got != 3 {
		t.Errorf("sessionlog.appends{ok} = %d, want 3", got)
	}
	if got := sumOf(rm, "sessionlog.appends", "sessionlog.outcome", "conflict"); got != 1 {
		t.Errorf("sessionlog.appends{conflict} = %d, want 1", got)
	}
	if got := sumOf(rm, "sessionlog.append.conflicts", "resolution", "rebased"); got != 1 {
		t.Errorf("conflicts{rebased} = %d, want 1", got)
	}
	if n := histCount(rm, "sessionlog.append.duration"); n != 4 {
		t.Errorf("append.duration count %d, want 4", n)
	}
	if n := histCount(rm, "sessionlog.rebuild.duration"); n < 2 {
		t.Errorf("rebuild.duration count %d, want at least 2 opens", n)
	}
	if n := histCount(rm, "sessionlog.snapshot.duration"); n < 2 {
		t.Errorf("snapshot.duration count %d, want a write and a load", n)
	}
}

func collect(t *testing.T, r *recorded) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

func find(rm metricdata.ResourceMetrics, name string) *metricdata.Metrics {
	for _, sm := range rm.ScopeMetrics {
		for i := range sm.Metrics {
			if sm.Metrics[i].Name == name {
				return &sm.Metrics[i]
			}
		}
	}
	return nil
}

// sumOf adds a counter's points whose attribute key has value.
func sumOf(rm metricdata.ResourceMetrics, name string, key attribute.Key, value string) int64 {
	m := find(rm, name)
	if m == nil {
		return -1
	}
	var n int64
	if s, ok := m.Data.(metricdata.Sum[int64]); ok {
		for _, p := range s.DataPoints {
			if v, ok := p.Attributes.Value(key); ok && v.AsString() == value {
				n += p.Value
			}
		}
	}
	return n
}

func histCount(rm metricdata.ResourceMetrics, name string) uint64 {
	m := find(rm, name)
	if m == nil {
		return 0
	}
	var n uint64
	if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
		for _, p := range h.DataPoints {
			n += p.Count
		}
	}
	return n
}

// gauge returns a gauge's value at the point whose attribute key has value.
func gauge(rm metricdata.ResourceMetrics, name string, key attribute.Key, value string) (int64, bool) {
	m := find(rm, name)
	if m == nil {
		return 0, false
	}
	if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
		for _, p := range g.DataPoints {
			if v, ok := p.Attributes.Value(key); ok && v.AsString() == value {
				return p.Value, true
			}
		}
	}
	return 0, false
}
