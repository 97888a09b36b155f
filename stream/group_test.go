package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// afterLeaf appends entries after whatever is last, as writers sharing a
// session do (the service's entries without a parent).
func afterLeaf(ctx context.Context, st *stream.Store, entries ...*session.Entry) error {
	return st.AppendWith(ctx, entries, stream.OptionsFor(stream.AfterLeaf, 0))
}

// groupStore is a store of a new session id on a backend of its own, and
// a context bounding the test.
func groupStore(t *testing.T, id string) (context.Context, *stream.Backend, *stream.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	b := newBackend(t)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return ctx, b, st
}

func groupEntry(id string) *session.Entry {
	return &session.Entry{Type: session.TypeMessage, ID: id, Timestamp: "2025-01-01T00:00:00.000Z",
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: 1}}
}

// sends records what each send carried, and holds the first until
// release is closed.
type sends struct {
	mu      sync.Mutex
	sizes   []int
	held    chan struct{} // closed once the first send is held
	release chan struct{}
	fail    func(msgs []*nats.Msg, send func() error) error // set: replaces sending
}

func holdFirstSend(b *stream.Backend) *sends {
	s := &sends{held: make(chan struct{}), release: make(chan struct{})}
	first := true
	stream.WrapSends(b, func(msgs []*nats.Msg, send func() error) error {
		s.mu.Lock()
		s.sizes = append(s.sizes, len(msgs))
		hold, fail := first, s.fail
		first = false
		s.mu.Unlock()
		if hold {
			close(s.held)
			<-s.release
		}
		if fail != nil {
			return fail(msgs, send)
		}
		return send()
	})
	return s
}

// startGrouped starts n appends of one entry each, after the first is
// held in its send, and waits until all n wait behind it.
func startGrouped(t *testing.T, ctx context.Context, st *stream.Store, s *sends, n int, entries func(i int) []*session.Entry) []chan error {
	t.Helper()
	firstDone := make(chan error, 1)
	go func() { firstDone <- afterLeaf(ctx, st, groupEntry("first")) }()
	<-s.held
	done := make([]chan error, n+1)
	done[0] = firstDone
	for i := range n {
		done[i+1] = make(chan error, 1)
		go func() { done[i+1] <- afterLeaf(ctx, st, entries(i)...) }()
	}
	sessiontest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if q := stream.GroupQueued(st); q != n+1 {
			return fmt.Errorf("%d appends queued, want %d", q, n+1)
		}
		return nil
	})
	return done
}

// Appends waiting behind one in flight go together as one atomic batch,
// each after the one before it: one round trip for all of them, one
// chain in the tree, every caller answered.
func TestWaitingAppendsGoAsOneBatch(t *testing.T) {
	ctx, b, st := groupStore(t, "grouped")
	s := holdFirstSend(b)
	const n = 12
	done := startGrouped(t, ctx, st, s, n, func(i int) []*session.Entry { return []*session.Entry{groupEntry(fmt.Sprintf("w%02d", i))} })
	close(s.release)
	for i, d := range done {
		if err := <-d; err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	s.mu.Lock()
	sizes := s.sizes
	s.mu.Unlock()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != n {
		t.Fatalf("sends carried %v entries, want [1 %d]: the waiting appends as one batch", sizes, n)
	}
	fresh, err := b.OpenStore(ctx, "grouped")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	entries, _ := fresh.Entries(ctx)
	branch, err := fresh.PathToRoot(ctx, mustLeaf(t, fresh))
	if err != nil || len(entries) != n+1 || len(branch) != n+1 {
		t.Fatalf("%d entries, %d on the leaf's branch (%v); want all %d in one chain", len(entries), len(branch), err, n+1)
	}
}

// In a group, an append that does not fit the tree, or that is a retry
// of one stored, is answered alone; the others are stored together.
func TestGroupAnswersEachAppendAlone(t *testing.T) {
	ctx, b, st := groupStore(t, "alone")
	stored := groupEntry("stored")
	if err := afterLeaf(ctx, st, stored); err != nil {
		t.Fatal(err)
	}
	s := holdFirstSend(b)
	bad := map[int]error{2: session.ErrDuplicateID, 5: session.ErrInvalidEntry, 7: session.ErrParentNotFound}
	done := startGrouped(t, ctx, st, s, 10, func(i int) []*session.Entry {
		switch i {
		case 2:
			e := groupEntry("first") // the id the held append stores
			e.Message.Content = session.TextContent("another")
			return []*session.Entry{e}
		case 3:
			return []*session.Entry{stored.Clone()} // a retry: stored already
		case 5:
			e := groupEntry("w05")
			e.Message.Role = "" // no role
			return []*session.Entry{e}
		case 7:
			// Two entries, the second naming a parent nowhere.
			e := groupEntry("w07b")
			e.ParentID = "nowhere"
			return []*session.Entry{groupEntry("w07"), e}
		}
		return []*session.Entry{groupEntry(fmt.Sprintf("w%02d", i))}
	})
	close(s.release)
	for i, d := range done {
		err := <-d
		if i == 0 {
			if err != nil {
				t.Fatalf("the held append: %v", err)
			}
			continue
		}
		want := bad[i-1]
		if (want == nil) != (err == nil) || want != nil && !errors.Is(err, want) {
			t.Errorf("append %d: %v, want %v", i-1, err, want)
		}
	}
	fresh, err := b.OpenStore(ctx, "alone")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	entries, _ := fresh.Entries(ctx)
	// stored, first, and the 10 but the three refused and the retry.
	if want := 2 + 10 - len(bad) - 1; len(entries) != want {
		t.Fatalf("%d entries stored, want %d", len(entries), want)
	}
	if e, err := fresh.Get(ctx, "first"); err != nil || e.Message.Content.Blocks[0].Text != "first" {
		t.Fatalf("entry first: %v %v", e, err)
	}
}

// A group's batch that another writer beat, or whose acknowledgement was
// lost after it was stored, still answers each append rightly: every
// entry stored exactly once, in one chain after the other writer's.
func TestGroupThroughConflictsAndLostAcks(t *testing.T) {
	for _, tc := range []string{"another writer first", "ack lost"} {
		t.Run(tc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b := newBackend(t)
			id := fmt.Sprintf("g%d", len(tc))
			st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close(ctx)
			other, err := newBackendOn(t, b.Config()).OpenStore(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(ctx)
			s := holdFirstSend(b)
			var once sync.Once
			s.fail = func(msgs []*nats.Msg, send func() error) error {
				if len(msgs) < 2 {
					return send()
				}
				var err error
				once.Do(func() {
					if tc == "ack lost" {
						if err = send(); err == nil {
							err = nats.ErrTimeout
						}
						return
					}
					if err = afterLeaf(ctx, other, groupEntry("other")); err == nil {
						err = send()
					}
				})
				if err != nil {
					return err
				}
				return send()
			}
			const n = 9
			done := startGrouped(t, ctx, st, s, n, func(i int) []*session.Entry { return []*session.Entry{groupEntry(fmt.Sprintf("w%02d", i))} })
			close(s.release)
			for i, d := range done {
				if err := <-d; err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			fresh, err := b.OpenStore(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close(ctx)
			want := n + 1
			if tc == "another writer first" {
				want++
			}
			entries, _ := fresh.Entries(ctx)
			branch, err := fresh.PathToRoot(ctx, mustLeaf(t, fresh))
			if err != nil || len(entries) != want || len(branch) != want {
				t.Fatalf("%d entries, %d on the leaf's branch (%v); want %d in one chain", len(entries), len(branch), err, want)
			}
			if s.sizes[1] != n {
				t.Fatalf("sends %v: the waiting appends were not tried as one batch", s.sizes)
			}
		})
	}
}

// An append whose caller gives up while it waits is not stored; and when
// batches cost more than the appends waiting, each goes alone.
func TestGroupLeavesOutWhatIsNotWorthIt(t *testing.T) {
	ctx, b, st := groupStore(t, "worth")
	stream.SetSendCosts(b, time.Microsecond, time.Hour)
	s := holdFirstSend(b)
	gone, leave := context.WithCancel(ctx)
	const n = 4
	done := startGrouped(t, ctx, st, s, n, func(i int) []*session.Entry { return []*session.Entry{groupEntry(fmt.Sprintf("w%02d", i))} })
	leaving := make(chan error, 1)
	go func() { leaving <- afterLeaf(gone, st, groupEntry("gone")) }()
	sessiontest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if q := stream.GroupQueued(st); q != n+2 {
			return fmt.Errorf("%d queued", q)
		}
		return nil
	})
	leave()
	if err := <-leaving; !errors.Is(err, context.Canceled) {
		t.Fatalf("the append given up: %v", err)
	}
	close(s.release)
	for i, d := range done {
		if err := <-d; err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	for _, size := range s.sizes {
		if size != 1 {
			t.Fatalf("sends %v: a batch that costs more than its appends alone", s.sizes)
		}
	}
	if _, err := st.Get(ctx, "gone"); !errors.Is(err, session.ErrEntryNotFound) {
		t.Fatalf("the append given up was stored: %v", err)
	}
	if q := stream.GroupQueued(st); q != 0 {
		t.Fatalf("%d appends left in the queue", q)
	}
}

// Two nodes' stores, eight writers each, appending after the leaf: every
// append answered, each entry stored once, all in one chain — through
// grouped batches, conflicts between the nodes and their fallbacks.
func TestGroupedWritersOnTwoNodes(t *testing.T) {
	const writers, each = 8, 30
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBackend(t)
	h := sessiontest.TestHeader("two-nodes")
	first, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	second, err := newBackendOn(t, b.Config()).OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	var batches atomic.Int64
	count := func(msgs []*nats.Msg, send func() error) error {
		if len(msgs) > 1 {
			batches.Add(1)
		}
		return send()
	}
	stream.WrapSends(b, count)
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for n, st := range []*stream.Store{first, second} {
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					if err := afterLeaf(ctx, st, groupEntry(fmt.Sprintf("n%dw%di%d", n, w, i))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fresh, err := b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	entries, _ := fresh.Entries(ctx)
	branch, err := fresh.PathToRoot(ctx, mustLeaf(t, fresh))
	if want := 2 * writers * each; err != nil || len(entries) != want || len(branch) != want {
		t.Fatalf("%d entries, %d on the leaf's branch (%v); want all %d in one chain", len(entries), len(branch), err, want)
	}
	t.Logf("%d atomic batches of grouped appends", batches.Load())
}
