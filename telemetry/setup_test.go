package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

// resetGlobals puts the no-op providers back after a test that installed
// SDK ones.
func resetGlobals(t *testing.T) {
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	})
}

func clearOTelEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
}

func TestSetupIsOffByDefault(t *testing.T) {
	clearOTelEnv(t)
	resetGlobals(t)
	r, err := telemetry.Setup(context.Background(), telemetry.SetupConfig{ServiceName: "sessionlog"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if r.Traces || r.Metrics || r.Describe() != "telemetry off" {
		t.Fatalf("setup with no OTEL_* variables: %+v", r)
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
		t.Fatal("an SDK tracer provider was installed")
	}
	// And OTEL_SDK_DISABLED wins over an endpoint.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if r2, err := telemetry.Setup(context.Background(), telemetry.SetupConfig{}); err != nil || r2.Traces || r2.Metrics {
		t.Fatalf("disabled: %+v %v", r2, err)
	}
}

// With an OTLP endpoint in the environment, spans of an append reach an
// OTLP/HTTP receiver; the Prometheus endpoint serves the metrics.
func TestSetupExportsOTLPAndPrometheus(t *testing.T) {
	clearOTelEnv(t)
	resetGlobals(t)
	var mu sync.Mutex
	got := map[string][]byte{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], b...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "none") // metrics go to Prometheus here
	t.Setenv("OTEL_SERVICE_NAME", "sessionlog-under-test")
	ctx := context.Background()
	r, err := telemetry.Setup(ctx, telemetry.SetupConfig{ServiceName: "sessionlog", PrometheusAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	if !r.Traces || !r.Metrics || r.Prometheus == "" {
		t.Fatalf("running: %+v", r)
	}
	// A backend made now uses the globals, as `serve`'s do.
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = "TEL_SETUP", "tel-setup"
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("setup"))
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := session.New(st, sessiontest.TestConfig())
	if _, err := sess.AppendMessage(ctx, session.Message{Role: "user", Content: session.TextContent("hi")}); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)

	res, err := http.Get(r.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`sessionlog_appends_total{`, `sessionlog_outcome="ok"`, `sessionlog_append_duration_seconds_bucket{`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
	// Close flushes the batched spans to the collector.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	traces := got["/v1/traces"]
	for _, want := range []string{"sessionlog.append", "sessionlog-under-test", "tel-setup.setup"} {
		if !bytes.Contains(traces, []byte(want)) {
			t.Fatalf("OTLP traces (%d bytes) lack %q; paths seen: %v", len(traces), want, keys(got))
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
