package tracker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/snapshots"
	"github.com/agentcore/sessionlog/tracker"
)

// seed writes a generated session of n entries in atomic batches.
func seed(b *testing.B, bk *stream.Backend, id string, n int) *stream.Store {
	b.Helper()
	ctx := context.Background()
	h, entries := sessiongen.Generate(n)
	h.ID = id
	st, err := bk.CreateStore(ctx, h)
	if err != nil {
		b.Fatal(err)
	}
	for len(entries) > 0 {
		k := min(len(entries), stream.MaxBatch)
		if err := st.AppendBatch(ctx, entries[:k]); err != nil {
			b.Fatal(err)
		}
		entries = entries[k:]
	}
	return st
}

// BenchmarkOpenSession opens sessions from the stream:
//   - full: 100k entries, no snapshot (every message read and decoded);
//   - snapshot+tail: the same 100k entries, a snapshot at 99.9k, 100 after;
//   - tail-only: a session of just 100 entries.
//
// x-tail-only divides by the tail-only time measured in the same run.
func BenchmarkOpenSession(b *testing.B) {
	const total, tail = 100_000, 100
	ctx := context.Background()
	cfg := streamConfig()
	cfg.SnapshotEvery, cfg.SnapshotOnCompaction = 0, false
	bk := backend(b, connect(b), cfg)

	full := seed(b, bk, "full", total)
	full.Close(ctx)
	snap := seed(b, bk, "snap", total-tail)
	// The header is the session's first message: its sequence is the epoch.
	m, err := bk.StreamOf("snap").GetLastMsgForSubject(ctx, bk.Config().SessionSubjects("snap"))
	if err != nil {
		b.Fatal(err)
	}
	var encoded *snapshots.Source
	seq, _ := snap.Sequence(ctx)
	snap.ReadTree(ctx, func(t *session.Tree) (err error) {
		encoded, err = snapshots.Capture(t, m.Sequence, seq)
		return err
	})
	if err := bk.SaveSnapshot(ctx, encoded); err != nil {
		b.Fatal(err)
	}
	s, _ := session.New(snap, sessiontest.TestConfig())
	for range tail {
		s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("tail")})
	}
	snap.Close(ctx)
	small := seed(b, bk, "small", tail)
	small.Close(ctx)

	open := func(b *testing.B, id string, wantSnap bool) time.Duration {
		st, info, err := bk.OpenStoreInfo(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if info.FromSnapshot != wantSnap {
			b.Fatalf("%s: open info %+v", id, info)
		}
		st.Close(ctx)
		return info.Took
	}
	var tailOnly time.Duration
	defer func() {
		// What the first context after such an open costs: the body is
		// read then, and every entry of the 100k-message branch decoded.
		b.Run("snapshot+tail+context", func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				st, err := bk.OpenStore(ctx, "snap")
				if err != nil {
					b.Fatal(err)
				}
				sess, _ := session.New(st, sessiontest.TestConfig())
				c, err := sess.BuildContext(ctx)
				if err != nil || len(c.Messages) != total {
					b.Fatalf("context of %d messages: %v", len(c.Messages), err)
				}
				took = append(took, time.Since(start))
				st.Close(ctx)
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
		})
	}()
	for _, c := range []struct {
		name string
		id   string
		snap bool
	}{{"tail-only", "small", false}, {"snapshot+tail", "snap", true}, {"full", "full", false}} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				took = append(took, open(b, c.id, c.snap))
			}
			slices.Sort(took)
			med := took[len(took)/2]
			if c.name == "tail-only" {
				tailOnly = med
			}
			b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
			if tailOnly > 0 {
				b.ReportMetric(float64(med)/float64(tailOnly), "x-tail-only")
			}
		})
	}
}

// BenchmarkReplicaLag measures how long after an append is acknowledged a
// replica on another connection has applied it.
func BenchmarkReplicaLag(b *testing.B) {
	ctx := context.Background()
	cfg := streamConfig()
	wb := backend(b, connect(b), cfg)
	st, err := wb.CreateStore(ctx, sessiontest.TestHeader("lag"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close(ctx)
	rc := tracker.DefaultConfig()
	rc.Session = "lag"
	r, err := tracker.Start(ctx, backend(b, connect(b), cfg), rc)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	m := session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("%0900d", 0))}
	var lags []time.Duration
	for b.Loop() {
		if _, err := s.AppendMessage(ctx, m); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		seq, _ := st.Sequence(ctx)
		if err := r.WaitFor(ctx, "lag", seq); err != nil {
			b.Fatal(err)
		}
		lags = append(lags, time.Since(acked))
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds()), "p50-lag-µs")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds()), "p99-lag-µs")
}
