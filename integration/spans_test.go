package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentcore/sessionlog/telemetry"
)

// slowAppends keeps the traces of the writers' appends that took over a
// second — their resends and what each attempt was told — so that a long
// gap can be read append by append.
type slowAppends struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

var slow = &slowAppends{}

// writerTelemetry is the writers' telemetry: spans kept only when slow.
var writerTelemetry = telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(slow)), noop.NewMeterProvider(), nil)

func (s *slowAppends) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *slowAppends) OnEnd(sp sdktrace.ReadOnlySpan) {
	if sp.Name() != "sessionlog.append" || sp.EndTime().Sub(sp.StartTime()) < time.Second {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.spans) == 1000 {
		s.spans = s.spans[1:]
	}
	s.spans = append(s.spans, sp)
}
func (s *slowAppends) Shutdown(context.Context) error   { return nil }
func (s *slowAppends) ForceFlush(context.Context) error { return nil }

// during describes the slow appends that ended in [from, to), each with
// its events as offsets from from.
func (s *slowAppends) during(from, to time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, sp := range s.spans {
		if sp.EndTime().Before(from) || !sp.EndTime().Before(to) {
			continue
		}
		fmt.Fprintf(&b, "    append %+v..%+v:", sp.StartTime().Sub(from).Round(time.Millisecond), sp.EndTime().Sub(from).Round(time.Millisecond))
		for _, ev := range sp.Events() {
			msg := ""
			for _, a := range ev.Attributes {
				msg += " " + a.Value.String()
			}
			if len(msg) > 120 {
				msg = msg[:120]
			}
			fmt.Fprintf(&b, "\n      %+v %s%s", ev.Time.Sub(from).Round(time.Millisecond), ev.Name, msg)
		}
		b.WriteString("\n")
	}
	return b.String()
}
