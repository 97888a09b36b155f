package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// SetupConfig says what a program exports besides what the standard
// OTEL_* environment variables ask for.
type SetupConfig struct {
	// ServiceName names the program in the resource (OTEL_SERVICE_NAME
	// and OTEL_RESOURCE_ATTRIBUTES win).
	ServiceName    string
	ServiceVersion string
	// PrometheusAddr serves a Prometheus scrape endpoint (/metrics) there;
	// "" serves none.
	PrometheusAddr string
}

// Running is what Setup installed.
type Running struct {
	// Traces and Metrics say whether each signal is exported; Prometheus
	// is the scrape URL ("" without one).
	Traces, Metrics bool
	Prometheus      string

	shutdown []func(context.Context) error
	srv      *http.Server
	wg       sync.WaitGroup
	once     sync.Once
}

// Setup installs SDK providers as the global ones when telemetry is asked
// for, and nothing otherwise (the globals stay no-ops, and instrumented
// code pays only for no-op calls):
//   - traces when OTEL_TRACES_EXPORTER names an exporter other than none,
//     or an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), exported as those variables say
//     (OTLP over HTTP by default, gRPC, or console);
//   - metrics likewise (OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT),
//     and to a Prometheus endpoint when cfg.PrometheusAddr is set;
//   - OTEL_SDK_DISABLED=true turns everything off.
//
// Close the result to flush and stop.
func Setup(ctx context.Context, cfg SetupConfig) (*Running, error) {
	r := &Running{}
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return r, nil
	}
	traces := wants("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	metrics := wants("OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if !traces && !metrics && cfg.PrometheusAddr == "" {
		return r, nil
	}
	// The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins
	// over what the program says: it is merged last.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(cfg.ServiceVersion)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: traces: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		otel.SetTracerProvider(tp)
		r.shutdown = append(r.shutdown, tp.Shutdown)
		r.Traces = true
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	var readers []sdkmetric.Option
	if metrics {
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("telemetry: metrics: %w", err), r.Close(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(reader))
		r.Metrics = true
	}
	if cfg.PrometheusAddr != "" {
		reg := prometheus.NewRegistry()
		exp, err := promexporter.New(promexporter.WithRegisterer(reg))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("telemetry: prometheus: %w", err), r.Close(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		if err := r.serve(ctx, cfg.PrometheusAddr, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})); err != nil {
			return nil, errors.Join(err, r.Close(ctx))
		}
		r.Metrics = true
	}
	if len(readers) > 0 {
		mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
		otel.SetMeterProvider(mp)
		r.shutdown = append(r.shutdown, mp.Shutdown)
	}
	return r, nil
}

// wants says whether the environment asks for a signal: its exporter
// variable names one other than none, or an OTLP endpoint is set for it.
func wants(exporterVar, endpointVar string) bool {
	if v := os.Getenv(exporterVar); v != "" {
		return v != "none"
	}
	return os.Getenv(endpointVar) != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

func (r *Running) serve(ctx context.Context, addr string, h http.Handler) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("telemetry: prometheus endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	r.Prometheus = "http://" + ln.Addr().String() + "/metrics"
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = r.srv.Serve(ln) // ends with ErrServerClosed on Close
	}()
	return nil
}

// Describe says what is exported, for a program's startup line.
func (r *Running) Describe() string {
	var parts []string
	if r.Traces {
		parts = append(parts, "traces")
	}
	if r.Metrics && r.Prometheus == "" {
		parts = append(parts, "metrics")
	}
	if r.Prometheus != "" {
		parts = append(parts, "metrics (Prometheus "+r.Prometheus+")")
	}
	if len(parts) == 0 {
		return "telemetry off"
	}
	return "telemetry: " + strings.Join(parts, ", ")
}

// Close flushes what is buffered and stops exporting. Idempotent.
func (r *Running) Close(ctx context.Context) error {
	var errs []error
	r.once.Do(func() {
		if r.srv != nil {
			errs = append(errs, r.srv.Shutdown(ctx))
			r.wg.Wait()
		}
		for _, f := range r.shutdown {
			errs = append(errs, f(ctx))
		}
	})
	return errors.Join(errs...)
}
