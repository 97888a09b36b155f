package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// A request whose outcome is unknown is sent again until the call's
// deadline, each try bounded by AttemptTimeout; one whose outcome is
// known is not.
func TestResend(t *testing.T) {
	wrongSeq := &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}
	cases := []struct {
		name      string
		errs      []error // returned by successive tries; the last repeats
		wantTries int
		wantErr   error
	}{
		{"answered at once", []error{nil}, 1, nil},
		{"no responders until a leader is elected", []error{nats.ErrNoResponders, jetstream.ErrNoStreamResponse, nil}, 3, nil},
		{"a try that timed out", []error{context.DeadlineExceeded, nats.ErrTimeout, nil}, 3, nil},
		{"temporarily unavailable, then in process", []error{stream.ErrUnavailable, stream.ErrInProcess, nil}, 3, nil},
		{"a known refusal is not resent", []error{wrongSeq}, 1, wrongSeq},
		{"nor is a closed connection", []error{nats.ErrConnectionClosed}, 1, nats.ErrConnectionClosed},
	}
	cfg := stream.DefaultConfig()
	cfg.AttemptTimeout = 200 * time.Millisecond
	b := newBackendWith(t, cfg)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tries, heard := 0, 0
			err := b.Resend(ctx, func(actx context.Context) error {
				d, ok := actx.Deadline()
				if !ok || time.Until(d) > cfg.AttemptTimeout {
					t.Errorf("try %d has no deadline within the attempt timeout", tries)
				}
				err := c.errs[min(tries, len(c.errs)-1)]
				tries++
				return err
			}, func(error) { heard++ })
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
			if tries != c.wantTries || heard != tries-1 {
				t.Errorf("%d tries, %d resends heard; want %d tries", tries, heard, c.wantTries)
			}
		})
	}
	t.Run("until the deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		tries := 0
		err := b.Resend(ctx, func(context.Context) error { tries++; return nats.ErrNoResponders }, nil)
		if !errors.Is(err, nats.ErrNoResponders) || tries < 3 || ctx.Err() == nil {
			t.Errorf("after %d tries: %v (ctx %v)", tries, err, ctx.Err())
		}
	})
}

// A read is a series of direct-get batches, bounded by count and by
// bytes: a session longer than one batch, and one larger than one
// batch's bytes, are read whole and in order.
func TestReadAcrossBatches(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		entries int
		size    int
	}{
		{"more entries than a batch", 2345, 10},
		{"more bytes than a batch", 14, 700 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t)
			id := strings.ReplaceAll(c.name, " ", "-")
			st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			parent := ""
			for i := 0; i < c.entries; {
				var batch []*session.Entry
				for ; i < c.entries && len(batch) < 100; i++ {
					e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("e%05d", i), ParentID: parent,
						Timestamp: "2026-12-03T07:00:00.000Z", Message: &session.Message{Role: session.RoleUser,
							Content: session.TextContent(strings.Repeat("x", c.size)), Timestamp: 1764745200000}}
					batch, parent, want = append(batch, e), e.ID, append(want, e.ID)
				}
				if err := st.AppendBatch(ctx, batch); err != nil && c.size < 1<<10 {
					t.Fatal(err)
				} else if err != nil {
					// Large entries go one at a time (a batch is one payload).
					for _, e := range batch {
						if err := st.Append(ctx, e); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			st.Close(ctx)
			got, err := newBackendOn(t, b.Config()).Open(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close(ctx)
			es, err := got.Entries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != len(want) {
				t.Fatalf("read %d entries, want %d", len(es), len(want))
			}
			for i, e := range es {
				if e.ID != want[i] {
					t.Fatalf("entry %d is %s, want %s", i, e.ID, want[i])
				}
			}
		})
	}
}

// An attempt in flight when the connection moves to another server (here,
// reconnects) was lost with the old connection: it is sent again at once,
// not after the attempt timeout.
func TestResendWhenTheConnectionMoves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, b := backendOnConn(t, ctx, node.ClientURL(), 10*time.Second)
	start, tries := time.Now(), 0
	err := b.Resend(ctx, func(actx context.Context) error {
		tries++
		if tries > 1 {
			return nil
		}
		go conn.ForceReconnect()
		<-actx.Done() // the reply that never comes
		return actx.Err()
	}, nil)
	if err != nil || tries != 2 {
		t.Fatalf("%d tries: %v", tries, err)
	}
	if took := time.Since(start); took > 5*time.Second { // half the attempt timeout
		t.Errorf("the resend waited %v for the lost attempt", took)
	}
}

// A server that takes requests and answers none (cut off from its
// cluster) is left for another after two silent attempts: the connection
// moves, and the resend is answered there.
func TestResendLeavesASilentServer(t *testing.T) {
	other, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go other.Start()
	defer other.Shutdown()
	if !other.ReadyForConnections(10 * time.Second) {
		t.Fatal("second server not ready")
	}
	silent := node.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, b := backendOnConn(t, ctx, silent+","+other.ClientURL(), 200*time.Millisecond)
	tries := 0
	err = b.Resend(ctx, func(actx context.Context) error {
		tries++
		if conn.ConnectedUrl() == silent {
			<-actx.Done() // taken, never answered
			return actx.Err()
		}
		return nil
	}, nil)
	if err != nil || conn.ConnectedUrl() == silent {
		t.Fatalf("after %d tries: %v, connected to %s", tries, err, conn.ConnectedUrl())
	}
	if tries > 4 {
		t.Errorf("%d tries before leaving the silent server", tries)
	}
}

// backendOnConn is a backend (of its own stream) on a connection of its
// own to urls, tried in order, with the given attempt timeout.
func backendOnConn(t *testing.T, ctx context.Context, urls string, attempt time.Duration) (*nats.Conn, *stream.Backend) {
	t.Helper()
	conn, err := nats.Connect(urls, nats.DontRandomize(), nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	n := streams.Add(1)
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = fmt.Sprintf("C%d", n), fmt.Sprintf("c%d", n)
	cfg.AttemptTimeout = attempt
	b, err := stream.New(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return conn, b
}

// Concurrent fresh reads share read barriers: the stream takes one per
// round of reads, not one per read, and every read still sees the write
// acknowledged before it began.
func TestReadBarriersAreShared(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	stream.AlwaysBarrier(b) // a cluster's streams take it; this server's alone need not
	w, err := b.CreateStore(ctx, sessiontest.TestHeader("shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	readers := make([]*stream.Store, 32)
	for i := range readers {
		if readers[i], err = b.OpenStore(ctx, "shared"); err != nil {
			t.Fatal(err)
		}
		defer readers[i].Close(ctx)
	}
	before := barriersIn(t, b)
	e := &session.Entry{Type: session.TypeCustom, ID: "written", Timestamp: "2026-12-03T07:00:00.000Z", Body: &session.Custom{CustomType: "x"}}
	if err := w.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(readers))
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.CatchUp(ctx); err != nil {
				errs <- err
				return
			}
			if leaf, _ := r.Leaf(ctx); leaf != "written" {
				errs <- fmt.Errorf("a read after the write sees leaf %q", leaf)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := barriersIn(t, b) - before; n < 1 || n >= uint64(len(readers)) {
		t.Errorf("%d barriers for %d concurrent reads", n, len(readers))
	}
}

// barriersIn counts the read barriers the stream holds.
func barriersIn(t *testing.T, b *stream.Backend) uint64 {
	t.Helper()
	info, err := b.Partitions()[0].Stream().Info(context.Background(), jetstream.WithSubjectFilter(b.Config().Prefix+".$sync.>"))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// A store whose session was deleted and created again says so with
// ErrRecreated — not ErrCorrupt, which is kept for data that cannot be
// read and is never retried.
func TestRecreatedIsNotCorrupt(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("again"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if err := b.Delete(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	h := sessiontest.TestHeader("again")
	h.Timestamp = "2026-12-03T08:00:00.000Z"
	again, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	err = st.CatchUp(ctx)
	if !errors.Is(err, stream.ErrRecreated) || errors.Is(err, stream.ErrCorrupt) {
		t.Fatalf("sync of a re-created session: %v", err)
	}
}

// A create whose acknowledgement is lost is sent again. A stream of one
// replica checks the sequence before the message id, so the resend is
// refused as if the session existed: the create must recognise its own
// header and succeed, and a second create of the id must still fail.
func TestCreateWhoseAckIsLost(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	defer b.Close(ctx)
	stream.LoseFirstHeaderAck(b)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("lost-ack"))
	if err != nil {
		t.Fatalf("create after a lost ack: %v", err)
	}
	seq, _ := st.Sequence(ctx)
	st.Close(ctx)
	if seq == 0 {
		t.Fatal("no sequence for the created session")
	}
	h := sessiontest.TestHeader("lost-ack")
	h.Timestamp = "2025-03-03T00:00:00.000Z" // another create, not a resend
	if _, err := b.CreateStore(ctx, h); !errors.Is(err, session.ErrSessionExists) {
		t.Fatalf("a second create of the id: %v", err)
	}
}

// A batch stored whose acknowledgement is lost is sent again, and the
// server refuses the copy for its message ids (10201): the append reads
// the stream, finds its entries stored once, and succeeds. (Under load,
// the bench's 32 writers met this as an error.)
func TestBatchWhoseAckIsLost(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	defer b.Close(ctx)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("lost-batch-ack"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	stream.LoseFirstBatchAck(b)
	var batch []*session.Entry
	parent := ""
	for i := range 3 {
		e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("b%d", i), ParentID: parent, Timestamp: "2025-01-01T00:00:01.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("x"), Timestamp: 1}}
		batch, parent = append(batch, e), e.ID
	}
	if err := st.AppendBatch(ctx, batch); err != nil {
		t.Fatalf("a batch whose ack was lost: %v", err)
	}
	re, err := b.OpenStore(ctx, "lost-batch-ack")
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close(ctx)
	entries, err := re.Entries(ctx)
	if err != nil || len(entries) != 3 {
		t.Fatalf("stored %d entries (%v), want the 3 once", len(entries), err)
	}
}

// A copy of a session's header or of an entry stored a second time (a
// stream source can deliver a message twice: how an edge node's sessions
// reach the hub) is read as the first: the session opens, catches up and
// has each entry once — not "corrupt", not "created again".
func TestCopiesOfMessagesAreReadOnce(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("copies"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	for i := range 3 {
		e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("e%d", i), Timestamp: "2026-12-05T00:00:00.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("hi"), Timestamp: 1}}
		if i > 0 {
			e.ParentID = fmt.Sprintf("e%d", i-1)
		}
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.JetStream().Stream(ctx, b.Config().StreamOf("copies"))
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, 3, 2} { // the header and two entries, again
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.JetStream().Publish(ctx, m.Subject, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CatchUp(ctx); err != nil {
		t.Fatalf("catching up past the copies: %v", err)
	}
	fresh, err := b.OpenStore(ctx, "copies")
	if err != nil {
		t.Fatalf("opening a session with copies: %v", err)
	}
	defer fresh.Close(ctx)
	for _, x := range []*stream.Store{st, fresh} {
		es, err := x.Entries(ctx)
		if err != nil || len(es) != 3 {
			t.Fatalf("%d entries (%v), want 3", len(es), err)
		}
	}
}
