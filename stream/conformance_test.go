package stream_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

func TestConformance(t *testing.T) {
	t.Run("stream", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(false, 1, nil)) })
	// Every reopen goes through a snapshot written just before: the
	// scenarios then run on trees opened from a skeleton and their tail.
	// Sessions whose context is a part of them (compacted, branched)
	// reopen from their snapshot's tip: their stores answer from a
	// stand-in until something else is asked.
	t.Run("snapshots", func(t *testing.T) {
		before := deferredOpens.Load()
		sessiontest.Run(t, conformanceBackend(true, 1, nil))
		if deferredOpens.Load() == before {
			t.Fatal("no scenario reopened from a snapshot's tip")
		}
	})
	t.Run("partitions", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(true, 4, nil)) })
	// Deployments made before a subject per session keep theirs.
	t.Run("subject per type", func(t *testing.T) { sessiontest.Run(t, conformanceBackend(true, 1, nil, stream.TypedSubjects)) })
	// An edge node's: a subject per session and node it came from.
	t.Run("edge", func(t *testing.T) {
		var used []*stream.Backend
		sessiontest.Run(t, conformanceBackend(true, 2, &used, func(c stream.Config) stream.Config {
			c.Edge, c.Origin = true, "laptop"
			return c
		}))
		n := 0
		for _, b := range used {
			s := b.Partitions()[0].Stream()
			info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(b.Config().Prefix+".>"))
			if err != nil {
				t.Fatal(err)
			}
			for subj := range info.State.Subjects {
				if !strings.HasSuffix(subj, ".o") {
					t.Fatalf("a message of the edge layout on %s", subj)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatal("the scenarios stored nothing on an edge's first partition")
		}
	})
	// Every member of every entry stored apart: what the scenarios read
	// back is resolved from the blob store, also after a snapshot and
	// across partitions.
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprintf("offload P=%d", parts), func(t *testing.T) {
			var used []*stream.Backend
			sessiontest.Run(t, conformanceBackend(true, parts, &used, func(c stream.Config) stream.Config {
				c.OffloadThreshold = 1
				return c
			}))
			var stored uint64
			for _, b := range used {
				n, err := b.Blobs().Usage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				stored += n
			}
			if stored == 0 {
				t.Fatalf("the scenarios stored no blob on %d backends", len(used))
			}
		})
	}
}

func conformanceBackend(viaSnapshot bool, partitions int, used *[]*stream.Backend, layout ...func(stream.Config) stream.Config) sessiontest.Backend {
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
			if used != nil {
				*used = append(*used, b)
			}
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
			if info.Deferred {
				deferredOpens.Add(1)
			}
			if viaSnapshot && (!info.FromSnapshot || !s2.Partial()) {
				t.Fatalf("reopen did not use the snapshot: %+v", info)
			}
			t.Cleanup(func() { s2.Close(ctx) })
			return &reopenable{s2, r.b}
		},
	}
}

// deferredOpens counts the conformance reopens made from a tip.
var deferredOpens atomic.Int64

// reopenable remembers the backend a store came from.
type reopenable struct {
	*stream.Store
	b *stream.Backend
}
