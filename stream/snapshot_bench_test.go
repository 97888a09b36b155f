package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/stream"
)

// BenchmarkSnapshotsOfAGrowingSession grows a session to 50,000 generated
// entries with a snapshot every 1,000, and reports the time spent writing
// snapshots: with segmented bodies (each snapshot keeps the segments of
// the one before) and, the baseline in the same run, with every body
// written whole, as before segments.
func BenchmarkSnapshotsOfAGrowingSession(b *testing.B) {
	const total, every = 50_000, 1_000
	ctx := context.Background()
	h, entries := sessiongen.Generate(total)
	for _, whole := range []bool{false, true} {
		name := "segmented"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			cfg := stream.DefaultConfig()
			cfg.SnapshotEvery, cfg.SnapshotOnCompaction = 0, false // only ours
			bk := newBackendWith(b, cfg)
			var spent, last time.Duration
			for i := range b.N {
				hh := h
				hh.ID = fmt.Sprintf("%s-%s-%d-%d", h.ID, name, b.N, i)
				st, err := bk.CreateStore(ctx, hh)
				if err != nil {
					b.Fatal(err)
				}
				for at := 0; at < total; at += every {
					if err := st.AppendBatch(ctx, entries[at:at+every]); err != nil {
						b.Fatal(err)
					}
					if whole {
						stream.ForgetSnapshots(bk, hh.ID)
					}
					t0 := time.Now()
					if err := st.Snapshot(ctx); err != nil {
						b.Fatal(err)
					}
					last = time.Since(t0)
					spent += last
				}
				st.Close(ctx)
			}
			b.ReportMetric(float64(spent.Milliseconds())/float64(b.N), "snapshot-ms/session")
			b.ReportMetric(float64(last.Microseconds())/1000, "last-snapshot-ms")
		})
	}
}
