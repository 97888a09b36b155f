package stream_test

import (
	"context"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

func TestConformance(t *testing.T) {
	t.Run("stream", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(false, 1)) })
	// Every reopen goes through a snapshot written just before: the
	// scenarios then run on trees opened from a skeleton and their tail.
	t.Run("snapshots", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(true, 1)) })
	t.Run("partitions", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(true, 4)) })
	// Deployments made before a subject per session keep theirs.
	t.Run("subject per type", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(true, 1, stream.TypedSubjects)) })
}

func conformanceBackend(viaSnapshot bool, partitions int, layout ...func(stream.Config) stream.Config) sessiontest.Backend {
	ctx := context.Background()
	cfg := stream.DefaultConfig()
	cfg.Partitions = partitions
	for _, l := range layout {
		cfg = l(cfg)
	}
	return sessiontest.Backend{
		Name: "jetstream",
		New: func(t *testing.T, h session.Header) session.Store {
			b := newBackendWith(t, cfg)
			s, err := b.CreateStore(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(ctx) })
			return &reopenable{s, b}
		},
		Reopen: func(t *testing.T, s session.Store) session.Store {
			r := s.(*reopenable)
			if viaSnapshot {
				if err := r.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Close(ctx); err != nil {
				t.Fatal(err)
			}
			s2, info, err := r.b.OpenStoreInfo(ctx, r.ID())
			if err != nil {
				t.Fatal(err)
			}
			if viaSnapshot && (!info.FromSnapshot || !s2.Partial()) {
				t.Fatalf("reopen did not use the snapshot: %+v", info)
			}
			t.Cleanup(func() { s2.Close(ctx) })
			return &reopenable{s2, r.b}
		},
	}
}

// reopenable remembers the backend a store came from.
type reopenable struct {
	*stream.Store
	b *stream.Backend
}
