package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

// Many goroutines appending "after whatever is last" through one store
// (and more through a store on another connection) all land once, on one
// chain; through the shared store they were committed in groups.
func TestGroupCommitKeepsOneChain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(ctx)
	tel := telemetry.New(tp, metricnoop.NewMeterProvider(), nil)
	b := newBackend(t, stream.WithTelemetry(tel))
	h := sessiontest.TestHeader("group")
	shared, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close(ctx)
	nc2, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	b2, err := stream.New(ctx, nc2, b.Config())
	if err != nil {
		t.Fatal(err)
	}
	other, err := b2.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)

	const goroutines, each = 12, 15
	opts := stream.AppendOptions{Policy: stream.Rebase, FollowLeaf: true}
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines*each)
	for g := range goroutines {
		for k, st := range []*stream.Store{shared, other} {
			wg.Go(func() {
				for i := range each {
					e := textEntry(fmt.Sprintf("s%dg%02di%02d", k, g, i), "")
					if err := st.AppendWith(ctx, []*session.Entry{e}, opts); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fresh, err := b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	entries, err := fresh.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2*goroutines*each {
		t.Fatalf("%d entries stored, want %d", len(entries), 2*goroutines*each)
	}
	seen := map[string]bool{}
	for i, e := range entries {
		if seen[e.ID] {
			t.Fatalf("%s stored twice", e.ID)
		}
		seen[e.ID] = true
		if i > 0 && e.ParentID != entries[i-1].ID {
			t.Fatalf("entry %d (%s) hangs under %s, not the entry before it", i, e.ID, e.ParentID)
		}
	}
	grouped := 0
	for _, s := range sr.Ended() {
		for _, ev := range s.Events() {
			if ev.Name == "sessionlog.group_commit" {
				grouped++
			}
		}
	}
	if grouped == 0 {
		t.Fatal("no append was committed in a group")
	}
	t.Logf("%d of %d appends went in groups", grouped, 2*goroutines*each)
}
