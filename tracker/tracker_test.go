package tracker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

// digest is a session as bytes: header, entries in order, leaf.
func digest(t *session.Tree) []byte {
	h := t.Header()
	es, err := t.Entries()
	if err != nil {
		panic(err)
	}
	b, err := codec.EncodeFile(&h, es)
	if err != nil {
		panic(err)
	}
	return append(b, "leaf="+t.Leaf()...)
}

func replicaDigest(t *testing.T, r *tracker.Tracker, id string) []byte {
	t.Helper()
	var d []byte
	if err := r.Read(context.Background(), id, func(tr *session.Tree) error { d = digest(tr); return nil }); err != nil {
		t.Fatal(err)
	}
	return d
}

func storeDigest(t *testing.T, st *stream.Store) []byte {
	t.Helper()
	var d []byte
	st.ReadTree(context.Background(), func(tr *session.Tree) error { d = digest(tr); return nil })
	return d
}

// Writers on three connections append to two sessions at once — messages,
// leaf moves, branch summaries, labels, compactions — while two replicas on
// connections of their own follow. After every write is acknowledged, both
// replicas wait for the last sequence and hold the same trees and leaves
// as a fresh read of the stream.
func TestReplicasConverge(t *testing.T) { sessiontest.EachLayout(t, testReplicasConverge) }

func testReplicasConverge(t *testing.T, partitions int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := streamConfig()
	cfg.Partitions = partitions
	wb := backend(t, connect(t), cfg, stream.WithConflictPolicy(stream.Rebase))
	ids := []string{"conv-a", "conv-b"}
	for _, id := range ids {
		st, err := wb.CreateStore(ctx, sessiontest.TestHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
	}
	all, err := tracker.Start(ctx, backend(t, connect(t), cfg), tracker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(ctx)
	oneCfg := tracker.DefaultConfig()
	oneCfg.Session = "conv-a"
	one, err := tracker.Start(ctx, backend(t, connect(t), cfg), oneCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close(ctx)
	// The all-sessions replica holds conv-b before the writes start, and
	// loads conv-a in the middle of them.
	replicaDigest(t, all, "conv-b")

	var mu sync.Mutex
	lastSeq := map[string]uint64{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := backend(t, connect(t), cfg, stream.WithConflictPolicy(stream.Rebase))
			st, err := b.OpenStore(ctx, ids[w%2])
			if err != nil {
				errs <- err
				return
			}
			defer st.Close(ctx)
			s, _ := session.New(st, system.Config())
			for i := range 20 {
				if err := writeStep(ctx, s, st, w, i); err != nil && !errors.Is(err, session.ErrConflict) {
					errs <- fmt.Errorf("writer %d step %d: %w", w, i, err)
					return
				}
				if i == 10 && w == 0 {
					replicaDigest(t, all, "conv-a")
				}
			}
			seq, _ := st.Sequence(ctx)
			mu.Lock()
			lastSeq[ids[w%2]] = max(lastSeq[ids[w%2]], seq)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, w := range []struct {
		r  *tracker.Tracker
		id string
	}{{all, "conv-a"}, {all, "conv-b"}, {one, "conv-a"}} {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		err := w.r.WaitFor(wctx, w.id, lastSeq[w.id])
		wcancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		fresh, err := wb.OpenStore(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := storeDigest(t, fresh)
		fresh.Close(ctx)
		if got := replicaDigest(t, all, id); !bytes.Equal(got, want) {
			t.Errorf("all-sessions replica differs from the stream on %s", id)
		}
		if id == "conv-a" {
			// The single-session replica may not have seen conv-b's last
			// sequence: wait for conv-a's own.
			if got := replicaDigest(t, one, id); !bytes.Equal(got, want) {
				t.Errorf("single-session replica differs from the stream on %s", id)
			}
		}
	}
	if st := all.Status(); st.Resets != 0 || st.Lag != 0 {
		t.Errorf("status after convergence: %+v", st)
	}
}

// writeStep does one of a mix of writes, so replicas see every kind.
func writeStep(ctx context.Context, s *session.Session, st *stream.Store, w, i int) error {
	var err error
	switch i % 7 {
	case 3:
		leaf, _ := st.Leaf(ctx)
		path, _ := st.PathToRoot(ctx, leaf)
		if len(path) > 2 {
			_, err = s.MoveTo(ctx, path[2].ID, session.WithBranchSummary(fmt.Sprintf("left by %d at %d", w, i), nil, false))
		}
	case 5:
		leaf, _ := st.Leaf(ctx)
		if leaf != "" {
			_, err = s.SetLabel(ctx, leaf, fmt.Sprintf("w%d-%d", w, i))
		}
	case 6:
		leaf, _ := st.Leaf(ctx)
		path, _ := st.PathToRoot(ctx, leaf)
		if len(path) > 1 {
			_, err = s.MoveTo(ctx, path[1].ID)
		}
	case 4:
		leaf, _ := st.Leaf(ctx)
		_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "compacted", FirstKeptEntryID: leaf, TokensBefore: int64(i)})
	default:
		_, err = s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("w%d m%d", w, i))})
	}
	return err
}

func TestReadYourWrites(t *testing.T) { sessiontest.EachLayout(t, testReadYourWrites) }

func testReadYourWrites(t *testing.T, partitions int) {
	ctx := context.Background()
	cfg := streamConfig()
	cfg.Partitions = partitions
	wb := backend(t, connect(t), cfg)
	st, err := wb.CreateStore(ctx, sessiontest.TestHeader("ryw"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	r, err := tracker.Start(ctx, backend(t, connect(t), cfg), tracker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	for i := range 20 {
		e, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := st.Sequence(ctx)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := r.WaitFor(wctx, "ryw", seq); err != nil {
			t.Fatal(err)
		}
		cancel()
		err = r.Read(ctx, "ryw", func(tr *session.Tree) error {
			if tr.Leaf() != e.ID {
				return fmt.Errorf("after waiting for %d the leaf is %q, not %q", seq, tr.Leaf(), e.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A sequence that will not come in time ends with the context.
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := r.WaitFor(wctx, "ryw", r.Status().Applied+1000); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for the future: %v", err)
	}
	// A single-session replica refuses another session's sequence.
	// Sequences are per partition: the other session shares ryw's.
	otherID := "ryw-other"
	for i := 0; stream.PartitionOf(otherID, partitions) != stream.PartitionOf("ryw", partitions); i++ {
		otherID = fmt.Sprintf("ryw-other-%d", i)
	}
	other, _ := wb.CreateStore(ctx, sessiontest.TestHeader(otherID))
	defer other.Close(ctx)
	otherSeq, _ := other.Sequence(ctx)
	oneCfg := tracker.DefaultConfig()
	oneCfg.Session = "ryw"
	one, err := tracker.Start(ctx, backend(t, connect(t), cfg), oneCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close(ctx)
	if err := one.WaitFor(ctx, "ryw", otherSeq); !errors.Is(err, tracker.ErrNotFollowed) {
		t.Fatalf("waiting for another session's sequence: %v", err)
	}
	if err := one.WaitFor(ctx, otherID, otherSeq); !errors.Is(err, tracker.ErrNotFollowed) {
		t.Fatalf("waiting for another session: %v", err)
	}
	if err := one.Read(ctx, "ryw-other", func(*session.Tree) error { return nil }); !errors.Is(err, tracker.ErrNotFollowed) {
		t.Fatalf("reading another session: %v", err)
	}
}

// A replica holding at most two trees evicts the coldest and rebuilds it,
// right, when it is read again.
func TestEviction(t *testing.T) { sessiontest.EachLayout(t, testEviction) }

func testEviction(t *testing.T, partitions int) {
	ctx := context.Background()
	cfg := streamConfig()
	cfg.Partitions = partitions
	wb := backend(t, connect(t), cfg)
	stores := map[string]*stream.Store{}
	for _, id := range []string{"e1", "e2", "e3"} {
		st, err := wb.CreateStore(ctx, sessiontest.TestHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		s, _ := session.New(st, sessiontest.TestConfig())
		s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(id)})
		stores[id] = st
	}
	rc := tracker.DefaultConfig()
	rc.MaxSessions = 2
	r, err := tracker.Start(ctx, backend(t, connect(t), cfg), rc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	for _, id := range []string{"e1", "e2", "e3", "e1"} {
		if got := replicaDigest(t, r, id); !bytes.Equal(got, storeDigest(t, stores[id])) {
			t.Fatalf("%s differs after a rebuild", id)
		}
	}
	st := r.Status()
	if st.Sessions != 2 || st.Evictions < 2 || st.Loads != 4 {
		t.Fatalf("status = %+v, want 2 held, 2+ evictions, 4 loads", st)
	}
	// A write to an evicted session is there when it is read again.
	s, _ := session.New(stores["e2"], sessiontest.TestConfig())
	e, _ := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("later")})
	seq, _ := stores["e2"].Sequence(ctx)
	if err := r.WaitFor(ctx, "e2", seq); err != nil {
		t.Fatal(err)
	}
	r.Read(ctx, "e2", func(tr *session.Tree) error {
		if tr.Leaf() != e.ID {
			t.Errorf("leaf of the rebuilt e2 = %q, want %q", tr.Leaf(), e.ID)
		}
		return nil
	})
}

// A session deleted and created again under the same id is rebuilt, not
// patched onto the old tree.
func TestRecreatedSessionResets(t *testing.T) {
	ctx := context.Background()
	cfg := streamConfig()
	wb := backend(t, connect(t), cfg)
	st, _ := wb.CreateStore(ctx, sessiontest.TestHeader("again"))
	s, _ := session.New(st, sessiontest.TestConfig())
	s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("old")})
	st.Close(ctx)
	r, err := tracker.Start(ctx, backend(t, connect(t), cfg), tracker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	replicaDigest(t, r, "again")
	if err := wb.Delete(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	// The delete leaves nothing in the stream to tail; the replica hears
	// of it from the index and lets the tree go.
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if err := r.Read(ctx, "again", func(*session.Tree) error { return nil }); !errors.Is(err, session.ErrSessionNotFound) {
			return fmt.Errorf("read after delete: %v", err)
		}
		return nil
	})
	h := sessiontest.TestHeader("again")
	h.Timestamp = "2025-02-02T00:00:00.000Z"
	st2, err := wb.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	seq, _ := st2.Sequence(ctx)
	if err := r.WaitFor(ctx, "again", seq); err != nil {
		t.Fatal(err)
	}
	if got := replicaDigest(t, r, "again"); !bytes.Equal(got, storeDigest(t, st2)) {
		t.Fatalf("replica kept the deleted session:\n%s", got)
	}
	if r.Status().Resets != 1 {
		t.Fatalf("status = %+v, want one reset (the delete)", r.Status())
	}
}

func TestReplicaWritesSnapshots(t *testing.T) {
	ctx := context.Background()
	cfg := streamConfig()
	cfg.SnapshotEvery = 5
	noSnap := cfg
	noSnap.SnapshotEvery, noSnap.SnapshotOnCompaction = 0, false
	wb := backend(t, connect(t), noSnap) // the writer itself never snapshots
	st, _ := wb.CreateStore(ctx, sessiontest.TestHeader("snapped"))
	defer st.Close(ctx)
	rc := tracker.DefaultConfig()
	rc.Session = "snapped"
	r, err := tracker.Start(ctx, backend(t, connect(t), cfg), rc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	for i := range 12 {
		s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint(i))})
	}
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if st := r.Status(); st.Snapshots == 0 {
			return fmt.Errorf("no snapshot yet: %+v", st)
		}
		return nil
	})
	_, info, err := wb.OpenStoreInfo(ctx, "snapped")
	if err != nil || !info.FromSnapshot {
		t.Fatalf("open after the replica's snapshot: %+v, %v", info, err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*tracker.Config)
		wantErr bool
	}{
		{"default", func(*tracker.Config) {}, false},
		{"one session", func(c *tracker.Config) { c.Session = "abc" }, false},
		{"bad session id", func(c *tracker.Config) { c.Session = "a.b" }, true},
		{"no room", func(c *tracker.Config) { c.MaxSessions = 0 }, true},
		{"no retry interval", func(c *tracker.Config) { c.RetryInterval = 0 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tracker.DefaultConfig()
			tt.mutate(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, tracker.ErrInvalidConfig)) {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
