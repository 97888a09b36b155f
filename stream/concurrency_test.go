package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// Several connections, several goroutines each, one session: every
// acknowledged entry ends up in the tree exactly once, nothing else does,
// and the parents form one tree.
func TestConcurrentWritersOneSession(t *testing.T) {
	const conns, perConn, each = 3, 4, 25
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBackend(t, stream.WithConflictPolicy(stream.Rebase))
	h := sessiontest.TestHeader("hammer")
	first, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	first.Close(ctx)

	var mu sync.Mutex
	acked := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, conns*perConn)
	for c := range conns {
		cn, err := nats.Connect(node.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Close()
		cb, err := stream.New(ctx, cn, b.Config(), stream.WithConflictPolicy(stream.Rebase))
		if err != nil {
			t.Fatal(err)
		}
		for g := range perConn {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := cb.OpenStore(ctx, h.ID)
				if err != nil {
					errs <- err
					return
				}
				defer st.Close(ctx)
				for i := range each {
					id := fmt.Sprintf("c%dg%di%d", c, g, i)
					leaf, _ := st.Leaf(ctx)
					e := &session.Entry{Type: session.TypeMessage, ID: id, ParentID: leaf, Timestamp: "2025-01-01T00:00:00.000Z",
						Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: 1}}
					if err := st.Append(ctx, e); err != nil {
						errs <- fmt.Errorf("%s: %w", id, err)
						return
					}
					mu.Lock()
					acked[id]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	final, err := b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err) // OpenStore applies every entry: parents must exist
	}
	defer final.Close(ctx)
	entries, _ := final.Entries(ctx)
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("entry %s stored %d times", id, n)
		}
		if acked[id] != 1 {
			t.Errorf("entry %s stored but never acknowledged", id)
		}
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged entry %s is missing", id)
		}
	}
	if len(entries) != conns*perConn*each {
		t.Errorf("%d entries, want %d", len(entries), conns*perConn*each)
	}
	// With every writer appending at its leaf and rebasing, the session is
	// one chain: the branch from the leaf holds every entry.
	branch, err := final.PathToRoot(ctx, mustLeaf(t, final))
	if err != nil || len(branch) != len(entries) {
		t.Errorf("branch from the leaf has %d entries, want all %d (%v)", len(branch), len(entries), err)
	}
}

func mustLeaf(t *testing.T, s session.Store) string {
	t.Helper()
	l, err := s.Leaf(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Two writers from the same state: one wins, the other gets a typed
// conflict carrying the winner's entry as the leaf, and wrote nothing.
func TestConflictIsReported(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	h := sessiontest.TestHeader("conflict")
	a, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	other, err := b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	sa, _ := session.New(a, sessiontest.TestConfig())
	won, err := sa.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("first")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sessiontest.TestConfig()
	cfg.IDs = session.IDFunc(func() string { return "loser" })
	so, _ := session.New(other, cfg)
	_, err = so.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("second")})
	var ce *session.ConflictError
	if !errors.Is(err, session.ErrConflict) || !errors.As(err, &ce) {
		t.Fatalf("loser got %v, want a ConflictError", err)
	}
	if ce.Leaf != won.ID || ce.Sequence == 0 {
		t.Fatalf("conflict = %+v, want leaf %s", ce, won.ID)
	}
	// The loser has caught up: a retry now goes on the new leaf.
	if leaf, _ := other.Leaf(ctx); leaf != won.ID {
		t.Fatalf("loser's leaf after the conflict = %q", leaf)
	}
	if _, err := other.Get(ctx, "loser"); !errors.Is(err, session.ErrEntryNotFound) {
		t.Fatalf("the losing entry was stored: %v", err)
	}
	e, err := so.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("second")})
	if err != nil || e.ParentID != won.ID {
		t.Fatalf("retry after catching up: %v (parent %v)", err, e)
	}
}

// An append retried by a writer whose view is stale — the first attempt
// was stored but its ack was lost — succeeds and stores nothing twice.
func TestRetriedAppendIsNotDuplicated(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	h := sessiontest.TestHeader("retry")
	a, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	stale, err := b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close(ctx)
	e := &session.Entry{Type: session.TypeCustom, ID: "once", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "x", Data: session.Raw(`{"n":1}`)}}
	if err := a.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := stale.Append(ctx, e.Clone()); err != nil {
			t.Fatalf("retry from a stale view: %v", err)
		}
		if err := a.Append(ctx, e.Clone()); err != nil {
			t.Fatalf("retry from the writer's own view: %v", err)
		}
	}
	different := e.Clone()
	different.Custom().Data = session.Raw(`{"n":2}`)
	if err := a.Append(ctx, different); !errors.Is(err, session.ErrDuplicateID) {
		t.Fatalf("a different entry with a used id: %v, want ErrDuplicateID", err)
	}
	fresh, err := b.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	if es, _ := fresh.Entries(ctx); len(es) != 1 {
		t.Fatalf("%d entries stored, want 1", len(es))
	}
}
