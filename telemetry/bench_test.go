package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

// sdk is telemetry on: every span sampled and kept in memory, every
// measurement aggregated.
func sdk(b *testing.B) *telemetry.T {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	return telemetry.New(tp, mp, nil)
}

// BenchmarkTelemetryOverhead appends ~1 KiB messages to a stream store
// (embedded node, fsync always) with telemetry off — the default: no-op
// providers — and on (SDK recording every span and metric), in one run.
// instrument/* times the instrumentation calls of one append alone.
func BenchmarkTelemetryOverhead(b *testing.B) {
	ctx := context.Background()
	text := strings.Repeat("x", 900)
	for _, mode := range []string{"off", "on"} {
		b.Run("append/"+mode, func(b *testing.B) {
			opts := []stream.Option{stream.WithTelemetry(telemetry.New(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider(), nil))}
			if mode == "on" {
				opts = []stream.Option{stream.WithTelemetry(sdk(b))}
			}
			bk := servicetest.Backend(b, nc, opts...)
			st, err := bk.CreateStore(ctx, sessiontest.TestHeader("bench"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close(ctx)
			sessiontest.TimedAppends(b, st, text)
		})
	}
	// What one append's instrumentation does, without the append.
	for _, mode := range []string{"none", "off", "on"} {
		b.Run("instrument/"+mode, func(b *testing.B) {
			tel := telemetry.New(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider(), nil)
			if mode == "on" {
				tel = sdk(b)
			}
			outcome := metric.WithAttributes(telemetry.OutcomeKey.String("ok"))
			b.ReportAllocs()
			for b.Loop() {
				h := nats.Header{}
				if mode == "none" {
					continue
				}
				c, span := tel.Tracer.Start(ctx, "sessionlog.append", trace.WithSpanKind(trace.SpanKindProducer))
				if span.IsRecording() {
					span.SetAttributes(telemetry.Messaging(telemetry.OpSend, "sessions.s.message", "s:1:abc")...)
					span.SetAttributes(telemetry.SessionKey.String("s"), attribute.Int("n", 1))
				}
				tel.Inject(c, h)
				tel.Appends.Add(c, 1, outcome)
				tel.AppendDuration.Record(c, 0.0005, outcome)
				span.End()
			}
		})
	}
}
