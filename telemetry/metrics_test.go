package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/telemetry"
	"github.com/agentcore/sessionlog/tracker"
)

// Handler outcomes, redeliveries and dead letters; replica lag, applied
// sequence and trees held; the service's cache and request durations.
func TestEventReplicaAndServiceMetrics(t *testing.T) {
	r := record(t, "METRICS")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, svcCfg := servicetest.Start(t, nc, r.b, nil)
	client := api.NewClient(nc, svcCfg.Subject)

	// A handler that always fails: two deliveries, then a dead letter.
	var runs atomic.Int32
	cfg := tracker.DefaultEventConfig("failing", session.TypeCustom)
	cfg.MaxDeliver, cfg.Backoff = 2, 10*time.Millisecond
	sub, err := tracker.Subscribe(ctx, r.b, cfg, func(context.Context, tracker.Event) error {
		runs.Add(1)
		return errors.New("cannot handle this")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(context.Background())
	rep, err := tracker.Start(ctx, r.b, tracker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close(context.Background())

	if err := client.Call(ctx, api.OpCreate, api.CreateRequest{ID: "m"}, nil); err != nil {
		t.Fatal(err)
	}
	var a api.AppendReply
	if err := client.Call(ctx, api.OpAppend, api.AppendRequest{Session: "m", Entries: []jsontext.Value{jsontext.Value(`{"type":"custom","customType":"x","data":{}}`)}}, &a); err != nil {
		t.Fatal(err)
	}
	if err := client.Call(ctx, api.OpOpen, api.SessionRequest{Session: "nobody"}, nil); err == nil {
		t.Fatal("opened a missing session")
	}
	if err := rep.WaitFor(ctx, "m", a.Sequence); err != nil {
		t.Fatal(err)
	}
	if err := rep.Read(ctx, "m", func(*session.Tree) error { return nil }); err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if sub.Status().DeadLettered != 1 {
			return errors.New("not dead-lettered yet")
		}
		return nil
	})
	rm := collect(t, r)
	if got := sumOf(rm, "sessionlog.events.handled", telemetry.OutcomeKey, "error"); got != 2 {
		t.Errorf("events.handled{error} = %d, want 2", got)
	}
	if got := sumOf(rm, "sessionlog.events.redeliveries", "messaging.consumer.group.name", "failing"); got != 1 {
		t.Errorf("redeliveries = %d, want 1", got)
	}
	if got := sumOf(rm, "sessionlog.events.dead_letters", "messaging.consumer.group.name", "failing"); got != 1 {
		t.Errorf("dead letters = %d, want 1", got)
	}
	if v, ok := gauge(rm, "sessionlog.replica.applied_sequence", "sessionlog.follows", "*"); !ok || v < int64(a.Sequence) {
		t.Errorf("replica applied = %d (%v), want ≥ %d", v, ok, a.Sequence)
	}
	if v, ok := gauge(rm, "sessionlog.replica.lag", "sessionlog.follows", "*"); !ok || v != 0 {
		t.Errorf("replica lag = %d (%v), want 0 once caught up", v, ok)
	}
	if v, ok := gauge(rm, "sessionlog.cache.sessions", telemetry.CacheKey, "replica"); !ok || v != 1 {
		t.Errorf("replica cache = %d (%v), want 1", v, ok)
	}
	if v, ok := gauge(rm, "sessionlog.cache.sessions", telemetry.CacheKey, "service"); !ok || v != 1 {
		t.Errorf("service cache = %d (%v), want 1", v, ok)
	}
	calls := map[string]uint64{}
	if m := find(rm, "sessionlog.service.duration"); m != nil {
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			op, _ := p.Attributes.Value(telemetry.OpKey)
			code, _ := p.Attributes.Value(telemetry.CodeKey)
			calls[op.AsString()+"/"+code.AsString()] += p.Count
		}
	}
	if calls["append/ok"] != 1 || calls["create/ok"] != 1 || calls["open/not_found"] != 1 {
		t.Errorf("service.duration counts %v", calls)
	}
}

// Content stored apart is counted: a new blob put, the same one found,
// a cold read and a cached one, with their bytes.
func TestBlobMetrics(t *testing.T) {
	r := record(t, "BLOBS")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	content := []byte(`"` + strings.Repeat("b", 300<<10) + `"`)
	ref, err := r.b.Blobs().Put(ctx, content)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.b.Blobs().Put(ctx, content); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.b.Blobs().Get(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	rm := collect(t, r)
	for op, want := range map[string]int64{"put": 1, "get": 1, "hit": 1} {
		if got := sumOf(rm, "sessionlog.blobs", telemetry.BlobOpKey, op); got != want {
			t.Errorf("blobs{%s} = %d, want %d", op, got, want)
		}
	}
	if got := sumOf(rm, "sessionlog.blobs.bytes", telemetry.BlobOpKey, "put"); got != int64(len(content)) {
		t.Errorf("blobs.bytes{put} = %d, want %d", got, len(content))
	}
}
