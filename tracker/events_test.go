package tracker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

type seen struct {
	mu     sync.Mutex
	events []tracker.Event
}

func (s *seen) add(ev tracker.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

func (s *seen) list() []tracker.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tracker.Event(nil), s.events...)
}

func compact(t *testing.T, st session.Store, summary string) *session.Entry {
	t.Helper()
	ctx := context.Background()
	s, _ := session.New(st, system.Config())
	s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("before " + summary)})
	leaf, _ := st.Leaf(ctx)
	e, err := s.AppendCompaction(ctx, session.Compaction{Summary: summary, FirstKeptEntryID: leaf, TokensBefore: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func eventConfig(durable string, types ...session.EntryType) tracker.EventConfig {
	c := tracker.DefaultEventConfig(durable, types...)
	c.AckWait, c.Backoff, c.MaxDeliver = time.Second, 20*time.Millisecond, 3
	return c
}

func TestEventsByTypeAcrossSessionsAndRestarts(t *testing.T) {
	sessiontest.EachLayout(t, testEventsByTypeAcrossSessionsAndRestarts)
}

func testEventsByTypeAcrossSessionsAndRestarts(t *testing.T, partitions int) {
	ctx := context.Background()
	cfg := streamConfig()
	cfg.Partitions = partitions
	b := backend(t, connect(t), cfg)
	a, _ := b.CreateStore(ctx, sessiontest.TestHeader("ev-a"))
	defer a.Close(ctx)
	c, _ := b.CreateStore(ctx, sessiontest.TestHeader("ev-b"))
	defer c.Close(ctx)
	compact(t, a, "a1")
	compact(t, c, "b1")

	var got seen
	sub, err := tracker.Subscribe(ctx, backend(t, connect(t), cfg), eventConfig("compactions", session.TypeCompaction),
		func(ctx context.Context, ev tracker.Event) error { got.add(ev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(got.list()); n != 2 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	for _, ev := range got.list() {
		if ev.Entry.Type != session.TypeCompaction || ev.Delivery != 1 {
			t.Errorf("event %+v", ev)
		}
	}
	sessiontest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if st := sub.Status(); st.Handled != 2 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	if err := sub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Written while nobody listens: delivered on resubscribing, and only
	// that — the two acknowledged ones are not seen again.
	compact(t, a, "a2")
	var again seen
	sub2, err := tracker.Subscribe(ctx, backend(t, connect(t), cfg), eventConfig("compactions", session.TypeCompaction),
		func(ctx context.Context, ev tracker.Event) error { again.add(ev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close(ctx)
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(again.list()); n != 1 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	if ev := again.list()[0]; ev.Entry.Summary() != "a2" || ev.Session != "ev-a" {
		t.Fatalf("after restart got %+v", ev)
	}
}

func TestFailingHandlerIsRetriedThenDeadLettered(t *testing.T) {
	ctx := context.Background()
	cfg := streamConfig()
	b := backend(t, connect(t), cfg)
	st, _ := b.CreateStore(ctx, sessiontest.TestHeader("dlq"))
	defer st.Close(ctx)
	flaky := compact(t, st, "flaky")
	poison := compact(t, st, "poison")
	after := compact(t, st, "after")

	var mu sync.Mutex
	tries := map[string][]int{}
	sub, err := tracker.Subscribe(ctx, backend(t, connect(t), cfg), eventConfig("picky", session.TypeCompaction),
		func(ctx context.Context, ev tracker.Event) error {
			mu.Lock()
			tries[ev.Entry.Summary()] = append(tries[ev.Entry.Summary()], ev.Delivery)
			mu.Unlock()
			switch {
			case ev.Entry.ID == poison.ID:
				return errors.New("cannot handle this one")
			case ev.Entry.ID == flaky.ID && ev.Delivery < 2:
				return errors.New("try again")
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(ctx)
	sessiontest.CheckFor(t, 15*time.Second, 10*time.Millisecond, func() error {
		if s := sub.Status(); s.Handled != 2 || s.DeadLettered != 1 {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	mu.Lock()
	if got := fmt.Sprint(tries["flaky"], tries["poison"], tries["after"]); got != "[1 2] [1 2 3] [1]" {
		t.Errorf("deliveries (flaky, poison, after) = %s", got)
	}
	mu.Unlock()
	_ = after
	// The dead letter keeps the entry and says where it came from and why.
	js, _ := jetstream.New(connect(t))
	dlq, err := js.Stream(ctx, tracker.DeadLetterStream(b))
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlq.GetLastMsgForSubject(ctx, tracker.DeadLetterSubject(b, "picky"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(tracker.HeaderDeliveries) != "3" || !strings.Contains(m.Header.Get(tracker.HeaderError), "cannot handle") ||
		m.Header.Get(tracker.HeaderOrigSubject) != b.SessionSubjects("dlq") {
		t.Fatalf("dead letter headers: %v", m.Header)
	}
	dm, err := b.Decode(m.Header.Get(tracker.HeaderOrigSubject), m.Data, 1)
	if err != nil || dm.Entry.ID != poison.ID {
		t.Fatalf("dead letter body: %v %+v", err, dm)
	}
}

// A consumer process killed with SIGKILL while it handles a compaction:
// the next process subscribing under the same durable name gets the same
// compaction again.
func TestKilledConsumerSeesTheCompactionAgain(t *testing.T) {
	if os.Getenv("SESSIONLOG_EVENT_CHILD") != "" {
		eventChild()
		return
	}
	ctx := context.Background()
	cfg := streamConfig()
	b := backend(t, connect(t), cfg)
	st, _ := b.CreateStore(ctx, sessiontest.TestHeader("crashy"))
	defer st.Close(ctx)
	e := compact(t, st, "handle me")
	seq, _ := st.Sequence(ctx)

	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledConsumerSeesTheCompactionAgain$")
	cmd.Env = append(os.Environ(), "SESSIONLOG_EVENT_CHILD=1", "SESSIONLOG_URL="+node.ClientURL(),
		"SESSIONLOG_STREAM="+cfg.Stream, "SESSIONLOG_PREFIX="+cfg.Prefix)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	gotSeq := ""
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "HANDLING "); ok {
			gotSeq = v
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if gotSeq != strconv.FormatUint(seq, 10) {
		t.Fatalf("child was handling %q, want %d", gotSeq, seq)
	}
	var again seen
	sub, err := tracker.Subscribe(ctx, backend(t, connect(t), cfg), eventConfig("crashy", session.TypeCompaction),
		func(ctx context.Context, ev tracker.Event) error { again.add(ev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(ctx)
	sessiontest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if len(again.list()) == 0 {
			return errors.New("not redelivered yet")
		}
		return nil
	})
	ev := again.list()[0]
	if ev.Entry.ID != e.ID || ev.Seq != seq || ev.Delivery < 2 {
		t.Fatalf("redelivered %+v, want %s at %d, delivery ≥ 2", ev, e.ID, seq)
	}
}

func eventChild() {
	ctx := context.Background()
	nc, err := nats.Connect(os.Getenv("SESSIONLOG_URL"))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = os.Getenv("SESSIONLOG_STREAM"), os.Getenv("SESSIONLOG_PREFIX")
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	_, err = tracker.Subscribe(ctx, b, eventConfig("crashy", session.TypeCompaction), func(ctx context.Context, ev tracker.Event) error {
		fmt.Printf("HANDLING %d\n", ev.Seq)
		<-ctx.Done() // busy until killed
		return ctx.Err()
	})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	select {}
}

func TestEventConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     tracker.EventConfig
		wantErr bool
	}{
		{"ok", tracker.DefaultEventConfig("d", session.TypeCompaction), false},
		{"no types", tracker.DefaultEventConfig("d"), true},
		{"bad durable", tracker.DefaultEventConfig("a.b", session.TypeLabel), true},
		{"bad type", tracker.DefaultEventConfig("d", "a.*"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err != nil) != tt.wantErr {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
