package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// Edges linking at once each keep their source: a stream's config is
// replaced whole, so a link whose source another update dropped adds it
// again. (Sources of domains nobody serves are kept as given.)
func TestEdgesLinkingAtOnceAllStay(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			if _, err := b.SourceFrom(ctx, fmt.Sprintf("edge%d", i), b.Config().Streams()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, b.Config().Streams()[0])
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Config.Sources) != 8 {
		t.Fatalf("%d sources after 8 edges linked at once", len(info.Config.Sources))
	}
	if _, err := b.SourceFrom(ctx, "other", []string{"NOT_THESE"}); err == nil {
		t.Fatal("an edge of another layout was taken in")
	}
	// A revoked edge's source goes (from the sessions stream and the
	// blobs'), the others stay; again, nothing changes.
	for i, changed := range []int{2, 0} {
		got, err := b.Unsource(ctx, "edge3")
		if err != nil || len(got) != changed {
			t.Fatalf("unsource (time %d): changed %v, %v", i+1, got, err)
		}
	}
	if info, err = s.Info(ctx); err != nil || len(info.Config.Sources) != 7 {
		t.Fatalf("%v sources after one of 8 was revoked (%v)", len(info.Config.Sources), err)
	}
}

// A session written by two nodes while apart (two writers of different
// origins, each continuing from the same entry) reads the same on every
// open — from the stream, from a snapshot of it, with a third backend that
// names no origin — by the rule of origins: the branch written last is
// the leaf, the other is apart.
func TestOriginsDecideTheLeafOnEveryRead(t *testing.T) {
	ctx := context.Background()
	cfg := stream.DefaultConfig()
	cfg.Origin = "laptop-a"
	a := newBackendWith(t, cfg)
	cfg = a.Config()
	cfg.Origin = "laptop-b"
	b := newBackendOn(t, cfg)
	cfg.Origin = ""
	reader := newBackendOn(t, cfg)

	at := func(second int) string { return fmt.Sprintf("2026-01-01T00:00:%02d.000Z", second) }
	msg := func(id, parent string, second int) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: at(second),
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: int64(second)}}
	}
	sa, err := a.CreateStore(ctx, sessiontest.TestHeader("apart"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.AppendBatch(ctx, []*session.Entry{msg("root", "", 1), msg("shared", "root", 2)}); err != nil {
		t.Fatal(err)
	}
	sb, err := b.OpenStore(ctx, "apart")
	if err != nil {
		t.Fatal(err)
	}
	// B writes later than A, both from "shared"; A's write lands last in
	// the stream, which would make it the leaf by order alone. (Writers
	// that were apart: each keeps its parent, Retry, as a write taken in
	// from a link does.)
	keep := stream.AppendOptions{Policy: stream.Retry}
	if err := sb.AppendWith(ctx, []*session.Entry{msg("b1", "shared", 9)}, keep); err != nil {
		t.Fatal(err)
	}
	if err := sa.AppendWith(ctx, []*session.Entry{msg("a1", "shared", 5), msg("a2", "a1", 6)}, keep); err != nil {
		t.Fatal(err)
	}
	check := func(how string, st *stream.Store) {
		t.Helper()
		err := st.ReadTree(ctx, func(tr *session.Tree) error {
			apart := tr.Apart()
			if tr.Leaf() != "b1" || len(apart) != 1 || apart[0].Origin != "laptop-a" || apart[0].Leaf != "a2" {
				return fmt.Errorf("leaf %s, apart %+v; want b1, laptop-a's a2", tr.Leaf(), apart)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
	}
	check("the writer A, caught up", catchUp(t, sa))
	fresh, err := reader.OpenStore(ctx, "apart")
	if err != nil {
		t.Fatal(err)
	}
	check("opened from the stream", fresh)
	if err := fresh.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	// A writes again, earlier than B's last: B's branch stays the leaf,
	// for a store opened from the snapshot (its skeleton keeps the
	// origins) as for the writer.
	if err := sa.AppendWith(ctx, []*session.Entry{msg("a3", "a2", 7)}, keep); err != nil {
		t.Fatal(err)
	}
	again, info, err := newBackendOn(t, cfg).OpenStoreInfo(ctx, "apart")
	if err != nil {
		t.Fatal(err)
	}
	err = again.ReadTree(ctx, func(tr *session.Tree) error {
		if apart := tr.Apart(); tr.Leaf() != "b1" || len(apart) != 1 || apart[0].Leaf != "a3" {
			return fmt.Errorf("from the snapshot: leaf %s, apart %+v", tr.Leaf(), apart)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !info.FromSnapshot {
		t.Fatalf("not opened from the snapshot: %+v", info)
	}
	for _, st := range []*stream.Store{sa, sb, fresh, again} {
		st.Close(ctx)
	}
}

func catchUp(t *testing.T, st *stream.Store) *stream.Store {
	t.Helper()
	if err := st.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}
