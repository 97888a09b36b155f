package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// BenchmarkOpenCompacted opens a session of 100,000 generated entries
// whose last compaction keeps 200 of them, from its snapshot and a tail of
// 100, and builds its context: the bench's compacted row, to profile.
func BenchmarkOpenCompacted(b *testing.B) {
	const total, kept, tail = 100_000, 200, 100
	ctx := context.Background()
	h, entries := sessiongen.Generate(total + tail)
	cfg := stream.DefaultConfig()
	cfg.SnapshotEvery, cfg.SnapshotOnCompaction = 0, false
	bk := newBackendWith(b, cfg)
	st, err := bk.CreateStore(ctx, h)
	if err != nil {
		b.Fatal(err)
	}
	for at := 0; at < total; at += 1000 {
		if err := st.AppendBatch(ctx, entries[at:at+1000]); err != nil {
			b.Fatal(err)
		}
	}
	comp := &session.Entry{Type: session.TypeCompaction, ID: "compaction", ParentID: entries[total-1].ID, Timestamp: entries[total-1].Timestamp,
		Body: &session.Compaction{Summary: "the work so far", FirstKeptEntryID: entries[total-kept].ID, TokensBefore: 100000}}
	if err := st.Append(ctx, comp); err != nil {
		b.Fatal(err)
	}
	if err := st.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	rest := make([]*session.Entry, tail)
	for i, e := range entries[total : total+tail] {
		c := *e
		if i == 0 {
			c.ParentID = comp.ID
		}
		rest[i] = &c
	}
	if err := st.AppendBatch(ctx, rest); err != nil {
		b.Fatal(err)
	}
	st.Close(ctx)
	var opening time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		s, err := bk.OpenStore(ctx, h.ID)
		if err != nil {
			b.Fatal(err)
		}
		opening += time.Since(t0)
		sess, err := session.New(s, system.Config())
		if err != nil {
			b.Fatal(err)
		}
		c, err := sess.BuildContext(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Messages) != 1+kept+tail {
			b.Fatalf("%d messages", len(c.Messages))
		}
		s.Close(ctx)
	}
	// The open's part, the rest being the context's.
	b.ReportMetric(float64(opening.Microseconds())/float64(b.N)/1000, "open-ms")
}
