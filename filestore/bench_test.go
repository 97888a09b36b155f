package filestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func writeGenerated(b *testing.B, n int) (string, int64) {
	b.Helper()
	h, entries := sessiongen.Generate(n)
	data, err := codec.EncodeFile(&h, entries)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), fmt.Sprintf("gen-%d.jsonl", n))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return p, int64(len(data))
}

// baselineRead is the floor any JSONL session reader pays: read the file
// and check every line is JSON (encoding/json.Valid).
func baselineRead(b *testing.B, p string) {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(data) {
		if !json.Valid(line) {
			b.Fatal("invalid line")
		}
	}
}

// BenchmarkOpenContext opens an n-entry session file and builds the
// context of its leaf (a branch of all n entries, no compaction). The
// x-baseline metric divides by the time of the read-and-validate floor
// measured in the same run.
func BenchmarkOpenContext(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			p, size := writeGenerated(b, n)
			base := minDuration(5, func() { baselineRead(b, p) })
			ctx := context.Background()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				s, err := filestore.Open(ctx, p, filestore.DefaultConfig())
				if err != nil {
					b.Fatal(err)
				}
				sess, _ := session.New(s, sessiontest.TestConfig())
				c, err := sess.BuildContext(ctx)
				if err != nil || len(c.Messages) != n {
					b.Fatalf("context: %d messages, %v", len(c.Messages), err)
				}
				s.Close(ctx)
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(perOp/float64(n), "ns/entry")
			b.ReportMetric(perOp/float64(base.Nanoseconds()), "x-baseline")
		})
	}
}

// minDuration runs fn k times and returns the fastest run: the least noisy
// estimate of its cost on a shared machine.
func minDuration(k int, fn func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range k {
		start := time.Now()
		fn()
		best = min(best, time.Since(start))
	}
	return best
}

// BenchmarkAppend appends one entry per op to a file, fsync per policy.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []filestore.SyncPolicy{filestore.SyncNone, filestore.SyncAlways} {
		b.Run("sync="+sync.String(), func(b *testing.B) {
			ctx := context.Background()
			cfg := filestore.DefaultConfig()
			cfg.Sync = sync
			s, err := filestore.Create(ctx, filepath.Join(b.TempDir(), "a.jsonl"), sessiontest.TestHeader("a"), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(ctx)
			sess, _ := session.New(s, sessiontest.TestConfig())
			_, entries := sessiongen.Generate(3)
			m := *entries[1].Message
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sess.AppendMessage(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
