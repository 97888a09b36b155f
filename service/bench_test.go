package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// unlimited lifts the rate limits: a benchmark is one very busy client.
func unlimited(c *service.Config) {
	c.Limits.Rate, c.Limits.Burst, c.Limits.TenantRate, c.Limits.TenantBurst = 1e9, 1e9, 1e9, 1e9
}

// BenchmarkServiceAppend compares one writer appending a ~1 KiB user
// message through the Go library (Session.AppendMessage on a stream
// store: the baseline) with the same append as a service request (JSON
// over NATS request/reply, strict decoding, freshness check) and a read
// of the context through the service, on the same node in the same run.
func BenchmarkServiceAppend(b *testing.B) {
	ctx := context.Background()
	text := strings.Repeat("x", 900)
	b.Run("library-append", func(b *testing.B) {
		f := start(b, nil)
		st, err := f.b.CreateStore(ctx, sessiontest.TestHeader("lib"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		sessiontest.TimedAppends(b, st, text)
	})
	body := jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)
	b.Run("service-append", func(b *testing.B) {
		f := start(b, unlimited)
		if err := f.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "svc"}, nil); err != nil {
			b.Fatal(err)
		}
		req := api.AppendRequest{Session: "svc", Entries: []jsontext.Value{body}}
		sessiontest.Timed(b, func() error { return f.c.Call(ctx, api.OpAppend, req, nil) })
	})
	// The floor under the service's overhead: one request and its reply
	// through the server, of an append's size, to a responder that does
	// nothing.
	payload := []byte(`{"session":"svc","entries":[` + string(body) + `]}`)
	b.Run("request-reply", func(b *testing.B) {
		timedResponder(b, payload, func() error { return nil })
	})
	// The floor under the service's append, measured: the library's append
	// behind a bare responder, the hop there and back around it with none
	// of the service's work (decode, checks, fill, its reply). The hop
	// around an append costs more than request-reply alone: the append's
	// fsync and goroutines share the two cores with it.
	b.Run("library-append-behind-request", func(b *testing.B) {
		f := start(b, nil)
		st, err := f.b.CreateStore(ctx, sessiontest.TestHeader("lib-hop"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		sess, err := session.New(st, sessiontest.TestConfig())
		if err != nil {
			b.Fatal(err)
		}
		timedResponder(b, payload, func() error {
			_, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(text)})
			return err
		})
	})
	b.Run("service-open", func(b *testing.B) {
		f := start(b, unlimited)
		if err := f.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "svc"}, nil); err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if err := f.c.Call(ctx, api.OpAppend, api.AppendRequest{Session: "svc", Entries: []jsontext.Value{body}}, nil); err != nil {
				b.Fatal(err)
			}
		}
		sessiontest.Timed(b, func() error { return f.c.Call(ctx, api.OpOpen, api.SessionRequest{Session: "svc"}, nil) })
	})
	// Linearizable reads write a read barrier; concurrent ones share it.
	b.Run("service-open-parallel", func(b *testing.B) {
		f := start(b, unlimited)
		if err := f.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "svc"}, nil); err != nil {
			b.Fatal(err)
		}
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := f.c.Call(ctx, api.OpOpen, api.SessionRequest{Session: "svc"}, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkServiceEntriesPage reads a page of 1,000 entries of an
// ADK-shaped session (each a message with a large unknown member, the
// framework's own record kept beside) through the service: what the
// framework adapters' loads are made of.
func BenchmarkServiceEntriesPage(b *testing.B) {
	ctx := context.Background()
	f := start(b, unlimited)
	if err := f.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "page"}, nil); err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum ", 20)
	for i := 0; i < 1000; i += 100 {
		var batch []jsontext.Value
		for range 100 {
			batch = append(batch, jsontext.Value(`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"`+text+`"}],"timestamp":1,`+
				`"adkEvent":{"invocationId":"inv-1","author":"user","actions":{"stateDelta":{},"artifactDelta":{}},"content":{"role":"user","parts":[{"text":"`+text+`"}]},"id":"abcdefgh","timestamp":1}}}`))
		}
		if err := f.c.Call(ctx, api.OpAppend, api.AppendRequest{Session: "page", Entries: batch}, nil); err != nil {
			b.Fatal(err)
		}
	}
	var r api.EntriesReply
	sessiontest.Timed(b, func() error {
		return f.c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "page", Limit: 1000}, &r)
	})
	if len(r.Entries) != 1000 {
		b.Fatalf("%d entries", len(r.Entries))
	}
}

// timedResponder times requests of payload, one at a time, to a bare
// responder that does work and answers.
func timedResponder(b *testing.B, payload []byte, work func() error) {
	subject := "bench.responder." + b.Name()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if err := work(); err != nil {
			b.Error(err)
		}
		m.Respond([]byte(`{"sequence":1}`))
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	sessiontest.Timed(b, func() error {
		_, err := nc.RequestWithContext(context.Background(), subject, payload)
		return err
	})
}
