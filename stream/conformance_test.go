package stream_test

import (
	"context"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

func TestConformance(t *testing.T) {
	ctx := context.Background()
	sessiontest.Run(t, sessiontest.Backend{
		Name: "jetstream",
		New: func(t *testing.T, h session.Header) session.Store {
			b := newBackend(t)
			s, err := b.CreateStore(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(ctx) })
			return &reopenable{s, b}
		},
		Reopen: func(t *testing.T, s session.Store) session.Store {
			r := s.(*reopenable)
			if err := r.Close(ctx); err != nil {
				t.Fatal(err)
			}
			s2, err := r.b.OpenStore(ctx, r.ID())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s2.Close(ctx) })
			return &reopenable{s2, r.b}
		},
	})
}

// reopenable remembers the backend a store came from.
type reopenable struct {
	*stream.Store
	b *stream.Backend
}
