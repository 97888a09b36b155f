package filestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func TestConformance(t *testing.T) {
	for _, sync := range []filestore.SyncPolicy{filestore.SyncAlways, filestore.SyncNone} {
		cfg := filestore.DefaultConfig()
		cfg.Sync = sync
		t.Run("sync="+sync.String(), func(t *testing.T) {
			sessiontest.Run(t, backend(cfg))
		})
	}
}

func backend(cfg filestore.Config) sessiontest.Backend {
	return sessiontest.Backend{
		Name: "jsonl",
		New: func(t *testing.T, h session.Header) session.Store {
			path := filepath.Join(t.TempDir(), h.ID+".jsonl")
			s, err := filestore.Create(context.Background(), path, h, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			return s
		},
		Reopen: func(t *testing.T, s session.Store) session.Store {
			ctx := context.Background()
			path := s.(*filestore.Store).Path()
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			s2, err := filestore.Open(ctx, path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s2.Close(ctx) })
			return s2
		},
	}
}
