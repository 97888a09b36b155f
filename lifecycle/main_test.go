package lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

var (
	nc      *nats.Conn
	streams atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.RunWithNode("sessionlog-lifecycle-test-", nil, func(_ *cluster.Node, c *nats.Conn) int {
		nc = c
		return m.Run()
	}))
}

// repos are the backends the tests run on: JetStream (a stream of the
// test's own, content of 1 KiB or more stored apart) and pi files.
func repos(t *testing.T) map[string]session.Repo {
	t.Helper()
	cfg := stream.DefaultConfig()
	n := streams.Add(1)
	cfg.Stream, cfg.Prefix, cfg.OffloadThreshold = fmt.Sprintf("L%d", n), fmt.Sprintf("l%d", n), 1024
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := filestore.NewRepo(t.TempDir(), filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]session.Repo{"jetstream": b, "files": fr}
}

// loadSamples imports pi's sample files into repo, as prefix-N, and
// returns their ids.
func loadSamples(t *testing.T, repo session.Repo, prefix string) []string {
	t.Helper()
	var ids []string
	for i, s := range sessiontest.PiSamples(t) {
		ld, err := codec.DecodeFile(s.Data, s.Name, codec.Strict, codec.WithRunner(parallel.Lines))
		if err != nil {
			t.Fatal(err)
		}
		h := ld.Tree.Header()
		h.ID = fmt.Sprintf("%s-%d", prefix, i)
		if err := lifecycle.Import(context.Background(), repo, h, ld.Tree); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		ids = append(ids, h.ID)
	}
	return ids
}
