package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// An HTTP client's traceparent is continued by the gateway, the service
// and the append.
func TestGatewayContinuesHTTPTrace(t *testing.T) {
	r := record(t, "GW")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, svcCfg := servicetest.Start(t, nc, r.b, nil)
	gcfg := gateway.DefaultConfig("127.0.0.1:0", nc.ConnectedUrl())
	gcfg.Subject, gcfg.Stream, gcfg.Telemetry = svcCfg.Subject, r.b.Config(), r.tel
	g, err := gateway.Start(ctx, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	post := func(path, body string) {
		req, _ := http.NewRequest("POST", g.URL()+path, strings.NewReader(body))
		req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("POST %s: %d", path, res.StatusCode)
		}
	}
	post("/v1/sessions", `{"id":"gw"}`)
	post("/v1/sessions/gw/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"hi"}}]}`)

	app := r.span(t, "sessionlog.append")
	if app.SpanContext().TraceID().String() != traceID {
		t.Fatalf("append span in trace %s, want the HTTP caller's %s", app.SpanContext().TraceID(), traceID)
	}
	srv := parentOf(r, app)
	if srv == nil || srv.Name() != svcCfg.Subject+" append" {
		t.Fatalf("append's parent %v, want the service span", srv)
	}
	// The gateway's span ends once the reply is written: the client may
	// have it a moment before the span is recorded.
	var gw sdktrace.ReadOnlySpan
	sessiontest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if gw = parentOf(r, srv); gw == nil {
			return errors.New("the gateway span is not recorded yet")
		}
		return nil
	})
	if gw == nil || gw.Name() != "POST /v1/sessions/{id}/entries" || gw.SpanKind() != trace.SpanKindServer || gw.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("service span's parent %v, want the gateway span under the caller's", gw)
	}
	if attrs(gw)["http.response.status_code"].AsInt64() != 200 {
		t.Fatalf("gateway span attributes %v", attrs(gw))
	}
}
