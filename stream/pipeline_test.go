package stream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

// startPipeline creates session id on b and starts a pipeline on it.
func startPipeline(t *testing.T, ctx context.Context, b *stream.Backend, id string) (*stream.Store, *stream.Pipeline) {
	t.Helper()
	st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	p, err := st.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st, p
}

func pipelineEntry(i int) *session.Entry {
	return &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("p%05d", i), Timestamp: "2026-01-01T00:00:00.000Z",
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint("chunk ", i)), Timestamp: 1}}
}

// A burst appended to a pipeline is stored whole, in order, each entry
// after the one before, in far fewer round trips (append spans) than
// entries: entries wait while a batch is in flight and go as the next.
func TestPipelineSendsABurstInFewBatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(ctx)
	b := newBackend(t, stream.WithTelemetry(telemetry.New(tp, noop.NewMeterProvider(), nil)))
	_, p := startPipeline(t, ctx, b, "burst")
	const n = 500
	for i := range n {
		if err := p.Append(pipelineEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if stored, err := p.Wait(ctx); err != nil || stored != n {
		t.Fatalf("Wait = %d, %v; want %d stored", stored, err, n)
	}
	if _, err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(pipelineEntry(n)); !errors.Is(err, stream.ErrPipelineClosed) {
		t.Fatalf("append after close: %v", err)
	}
	got, err := b.OpenStore(ctx, "burst")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close(ctx)
	es, err := got.Entries(ctx)
	if err != nil || len(es) != n {
		t.Fatalf("%d entries stored (%v), want %d", len(es), err, n)
	}
	for i, e := range es {
		if e.ID != pipelineEntry(i).ID || (i > 0 && e.ParentID != es[i-1].ID) {
			t.Fatalf("entry %d is %s after %s: not the chain appended", i, e.ID, e.ParentID)
		}
	}
	batches, entries := 0, 0
	for _, s := range sr.Ended() {
		if s.Name() != "sessionlog.append" {
			continue
		}
		batches++
		for _, a := range s.Attributes() {
			if a.Key == telemetry.EntriesKey {
				entries += int(a.Value.AsInt64())
			}
		}
	}
	if entries != n || batches > n/2 {
		t.Fatalf("%d entries sent in %d appends: want %d in at most %d", entries, batches, n, n/2)
	}
	t.Logf("%d entries in %d round trips", entries, batches)
}

// The chain is conditional: a write by another writer stops it. Wait and
// every Append after say how many of the pipeline's entries were stored
// and which was the first not; nothing after it is stored.
func TestPipelineStopsAtAnotherWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	st, p := startPipeline(t, ctx, b, "chain")
	defer p.Close(ctx)
	for i := range 10 {
		if err := p.Append(pipelineEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if stored, err := p.Wait(ctx); err != nil || stored != 10 {
		t.Fatalf("Wait = %d, %v", stored, err)
	}
	// Another writer, through a backend of its own.
	b2, err := stream.New(ctx, nc, b.Config())
	if err != nil {
		t.Fatal(err)
	}
	other, err := b2.OpenStore(ctx, "chain")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := session.New(other, sessiontest.TestConfig())
	if _, err := s2.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("between")}); err != nil {
		t.Fatal(err)
	}
	other.Close(ctx)
	for i := 10; i < 15; i++ {
		if err := p.Append(pipelineEntry(i)); err != nil {
			break // the chain may have stopped already
		}
	}
	stored, err := p.Wait(ctx)
	var perr *stream.PipelineError
	var conflict *session.ConflictError
	if !errors.As(err, &perr) || perr.Stored != 10 || stored != 10 || perr.Entry != pipelineEntry(10).ID || !errors.As(err, &conflict) {
		t.Fatalf("Wait = %d, %v; want a conflict after 10 stored, at entry 10", stored, err)
	}
	if err := p.Append(pipelineEntry(20)); !errors.As(err, &perr) {
		t.Fatalf("append after the chain stopped: %v", err)
	}
	if err := st.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	es, _ := st.Entries(ctx)
	if len(es) != 11 {
		t.Fatalf("%d entries stored, want the pipeline's 10 and the other writer's", len(es))
	}
}

// An entry that is not one is refused by Append without stopping the
// chain; one that does not fit the tree stops it when sent.
func TestPipelineRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	_, p := startPipeline(t, ctx, b, "refusals")
	defer p.Close(ctx)
	if err := p.Append(nil); !errors.Is(err, session.ErrInvalidEntry) {
		t.Fatalf("nil entry: %v", err)
	}
	bad := pipelineEntry(0)
	bad.Timestamp = "yesterday"
	if err := p.Append(bad); !errors.Is(err, session.ErrInvalidEntry) {
		t.Fatalf("bad timestamp: %v", err)
	}
	if err := p.Append(pipelineEntry(1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(pipelineEntry(1)); !errors.Is(err, session.ErrInvalidEntry) {
		t.Fatalf("an id twice: %v", err)
	}
	if stored, err := p.Wait(ctx); err != nil || stored != 1 {
		t.Fatalf("Wait = %d, %v", stored, err)
	}
	// A batch is atomic: entries sent with the orphan would not be stored
	// either, and the error would name the batch's first.
	orphan := pipelineEntry(2)
	orphan.ParentID = "nowhere"
	if err := p.Append(orphan); err != nil {
		t.Fatal(err)
	}
	stored, err := p.Wait(ctx)
	var perr *stream.PipelineError
	if !errors.As(err, &perr) || stored != 1 || perr.Entry != orphan.ID || !errors.Is(err, session.ErrParentNotFound) {
		t.Fatalf("Wait = %d, %v; want the chain stopped at the orphan after 1 stored", stored, err)
	}
}
