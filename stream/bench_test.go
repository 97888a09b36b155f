package stream_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// benchSessions numbers the sessions benchmarks create (a -count run
// creates each again).
var benchSessions atomic.Int64

func benchMessage() session.Message {
	return session.Message{Role: session.RoleUser, Content: session.TextContent(strings.Repeat("x", 900))}
}

// BenchmarkAppend measures one writer on one session: raw JetStream sync
// publish of the same payload (the baseline) and Session.AppendMessage
// (encode, sequence check, dedupe id, tree update), on the test node
// (file store, fsync always).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	m := benchMessage()
	e := &session.Entry{Type: session.TypeMessage, ID: "abcd1234", ParentID: "abcd1233", Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
	payload, _ := codec.EncodeEntryMsgpack(e)

	b.Run("raw-publish", func(b *testing.B) {
		bk := newBackend(b)
		js := bk.JetStream()
		subject := bk.Config().Prefix + ".raw.message"
		sessiontest.Timed(b, func() error { _, err := js.Publish(ctx, subject, payload); return err })
	})
	b.Run("session-append", func(b *testing.B) {
		bk := newBackend(b)
		st, err := bk.CreateStore(ctx, sessiontest.TestHeader("bench"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		sess, _ := session.New(st, sessiontest.TestConfig())
		sessiontest.Timed(b, func() error { _, err := sess.AppendMessage(ctx, m); return err })
	})
	b.Run("pipeline", func(b *testing.B) { benchPipeline(b, newBackend(b), m, 0) })
}

// BenchmarkConcurrentAppend runs 16 writers, each on its own session,
// raw publishes against ours; ns/op is per append across all writers.
func BenchmarkConcurrentAppend(b *testing.B) {
	const writers = 16
	ctx := context.Background()
	m := benchMessage()
	e := &session.Entry{Type: session.TypeMessage, ID: "abcd1234", ParentID: "abcd1233", Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
	payload, _ := codec.EncodeEntryMsgpack(e)
	run := func(b *testing.B, op func(w int) error) {
		var wg sync.WaitGroup
		per := b.N/writers + 1
		b.ResetTimer()
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					if err := op(w); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	b.Run("raw-publish", func(b *testing.B) {
		bk := newBackend(b)
		js := bk.JetStream()
		run(b, func(w int) error {
			_, err := js.Publish(ctx, fmt.Sprintf("%s.raw%d.message", bk.Config().Prefix, w), payload, jetstream.WithRetryAttempts(0))
			return err
		})
	})
	b.Run("session-append", func(b *testing.B) {
		bk := newBackend(b)
		sessions := make([]*session.Session, writers)
		for w := range writers {
			st, err := bk.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("w%d", w)))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close(ctx)
			sessions[w], _ = session.New(st, sessiontest.TestConfig())
		}
		run(b, func(w int) error {
			_, err := sessions[w].AppendMessage(ctx, m)
			return err
		})
	})
}

// BenchmarkAppendDefaultSync is BenchmarkAppend on a node of its own with
// the server's default fsync (every two minutes): the publish is then
// cheap, and what sessionlog adds to it shows. raw-checked is the floor
// of any append: a publish with its message id and sequence check.
// Profile it with -cpuprofile to see where an append's own time goes;
// cpu-µs is the process's CPU (the server's included) an operation.
func BenchmarkAppendDefaultSync(b *testing.B) {
	ctx := context.Background()
	bk := defaultSyncBackend(b)
	m := benchMessage()
	e := &session.Entry{Type: session.TypeMessage, ID: "abcd1234", ParentID: "abcd1233", Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
	payload, _ := codec.EncodeEntryMsgpack(e)
	b.Run("raw-publish", func(b *testing.B) {
		js := bk.JetStream()
		subject := bk.Config().Prefix + ".raw"
		sessiontest.Timed(b, func() error { _, err := js.Publish(ctx, subject, payload); return err })
	})
	b.Run("raw-checked", func(b *testing.B) {
		js := bk.JetStream()
		id := fmt.Sprintf("rawc%d", benchSessions.Add(1))
		filter := bk.SessionSubjects(id)
		subject := filter
		if root, ok := strings.CutSuffix(filter, ">"); ok {
			subject = root + string(session.TypeMessage)
		}
		var last uint64
		i := 0
		sessiontest.Timed(b, func() error {
			i++
			m := nats.NewMsg(subject)
			m.Data = payload
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-%d", id, i))
			ack, err := js.PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(last, filter))
			if err == nil {
				last = ack.Sequence
			}
			return err
		})
	})
	b.Run("session-append", func(b *testing.B) {
		st, err := bk.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("bench-%d-%d", b.N, benchSessions.Add(1))))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		sess, _ := session.New(st, sessiontest.TestConfig())
		b.ReportAllocs()
		sessiontest.Timed(b, func() error { _, err := sess.AppendMessage(ctx, m); return err })
	})
	// One writer streaming entries through a Pipeline: ns/op is the cost
	// an entry, the round trips shared by the entries of each burst.
	b.Run("pipeline", func(b *testing.B) { benchPipeline(b, bk, m, 0) })
}

// benchPipeline appends b.N entries of m to a new session of bk through a
// Pipeline, as fast as they come, waiting for them after every burst
// (burst 0: only at the end).
func benchPipeline(b *testing.B, bk *stream.Backend, m session.Message, burst int) {
	ctx := context.Background()
	st, err := bk.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("bench-pipe-%d-%d", b.N, benchSessions.Add(1))))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close(ctx)
	p, err := st.Pipeline(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", i), Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
		if err := p.Append(e); err != nil {
			b.Fatal(err)
		}
		if burst > 0 && (i+1)%burst == 0 {
			if _, err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := p.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPipelineBursts streams entries in bursts of 1, 3, 8 and 50,
// each waited for, through a Pipeline and, the baseline, appended one by
// one (fsync always, the test node): ns/op is an entry. A pipeline sends
// a burst as one atomic batch only when it pays for the batch (some 3 ms
// on the server), so small bursts cost what one-by-one appends do.
func BenchmarkPipelineBursts(b *testing.B) {
	ctx := context.Background()
	m := benchMessage()
	bk := newBackend(b)
	for _, burst := range []int{1, 3, 8, 50} {
		b.Run(fmt.Sprintf("burst=%d/pipeline", burst), func(b *testing.B) { benchPipeline(b, bk, m, burst) })
		b.Run(fmt.Sprintf("burst=%d/one-by-one", burst), func(b *testing.B) {
			st, err := bk.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("bursts-seq-%d-%d", burst, benchSessions.Add(1))))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close(ctx)
			sess, _ := session.New(st, sessiontest.TestConfig())
			b.ResetTimer()
			for range b.N {
				if _, err := sess.AppendMessage(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSharedSessionAppend runs 16 writers on one session, each
// appending after the leaf (Rebase, FollowLeaf) as agents sharing a
// session do, against one raw loop of checked publishes (the round trip
// each append of a session had to wait for, before appends waiting were
// sent together), with fsync always and at the server's default: ns/op
// is per append.
func BenchmarkSharedSessionAppend(b *testing.B) {
	for _, sync := range []string{"fsync-always", "fsync-default"} {
		b.Run(sync, func(b *testing.B) {
			var bk *stream.Backend
			if sync == "fsync-always" {
				bk = newBackend(b)
			} else {
				bk = defaultSyncBackend(b)
			}
			benchSharedSession(b, bk)
		})
	}
}

func benchSharedSession(b *testing.B, bk *stream.Backend) {
	const writers = 16
	ctx := context.Background()
	m := benchMessage()
	e := &session.Entry{Type: session.TypeMessage, ID: "abcd1234", ParentID: "abcd1233", Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
	payload, _ := codec.EncodeEntryMsgpack(e)
	b.Run("checked-loop", func(b *testing.B) {
		js := bk.JetStream()
		id := fmt.Sprintf("loop%d", benchSessions.Add(1))
		subject, filter := bk.Config().Prefix+"."+id, bk.SessionSubjects(id)
		var last uint64
		for b.Loop() {
			ack, err := js.Publish(ctx, subject, payload, jetstream.WithExpectLastSequenceForSubject(last, filter))
			if err != nil {
				b.Fatal(err)
			}
			last = ack.Sequence
		}
	})
	b.Run("session-append", func(b *testing.B) {
		st, err := bk.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("shared%d", benchSessions.Add(1))))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		for range writers {
			wg.Go(func() {
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					m := m
					e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", i), Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
					if err := st.AppendWith(ctx, []*session.Entry{e}, stream.OptionsFor(stream.AfterLeaf, 0)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

// defaultSyncBackend is a backend on a node of its own with the server's
// default fsync (every two minutes), closed with b.
func defaultSyncBackend(b *testing.B) *stream.Backend {
	ctx := context.Background()
	cfg := cluster.DefaultConfig(b.TempDir())
	cfg.SyncAlways = false
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close(ctx) })
	conn, err := n.Connect()
	if err != nil {
		b.Fatal(err)
	}
	scfg := stream.DefaultConfig()
	scfg.SnapshotEvery = 0 // as sessionlog bench appends: snapshots are measured apart
	bk, err := stream.New(ctx, conn, scfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bk.Close(ctx) })
	return bk
}
