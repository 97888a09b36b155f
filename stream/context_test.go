package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// A long compacted session opened from its snapshot builds its context
// from the few entries it needs: the store stays partial (the body is not
// read whole), and the context is the one the whole session gives.
func TestContextFromSnapshotReadsOnlyItsPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	h, entries := sessiongen.Generate(3000)
	st, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(entries); i += 500 {
		if err := st.AppendBatch(ctx, entries[i:i+500]); err != nil {
			t.Fatal(err)
		}
	}
	comp := &session.Entry{Type: session.TypeCompaction, ID: "comp1", ParentID: entries[len(entries)-1].ID, Timestamp: "2026-01-01T00:00:00.000Z", Body: &session.Compaction{Summary: "earlier work", FirstKeptEntryID: entries[2900].ID, TokensBefore: 1000}}
	tail := []*session.Entry{comp}
	for i := range 30 {
		tail = append(tail, &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("t%03d", i), ParentID: tail[len(tail)-1].ID, Timestamp: "2026-01-01T00:00:01.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint("after ", i)), Timestamp: 1}})
	}
	if err := st.AppendBatch(ctx, tail[:10]); err != nil {
		t.Fatal(err)
	}
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendBatch(ctx, tail[10:]); err != nil { // a tail after the snapshot
		t.Fatal(err)
	}
	st.Close(ctx)

	want, err := b.LoadTree(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	branch, err := want.Tree.Branch(want.Tree.Leaf())
	if err != nil {
		t.Fatal(err)
	}
	wantCtx := session.BuildContext(branch, session.ContextOptions{})

	st2, info, err := b.OpenStoreInfo(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	if !info.FromSnapshot || info.Tail < 20 {
		t.Fatalf("opened %+v, want from the snapshot with the tail after it", info)
	}
	sess, err := session.New(st2, system.Config())
	if err != nil {
		t.Fatal(err)
	}
	got, err := sess.BuildContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != len(wantCtx.Messages) || len(got.Messages) != 1+100+30 {
		t.Fatalf("%d messages, the whole session gives %d", len(got.Messages), len(wantCtx.Messages))
	}
	for i := range got.Messages {
		a, _ := codec.EncodeMessage(got.Messages[i])
		b, _ := codec.EncodeMessage(wantCtx.Messages[i])
		if string(a) != string(b) || got.Sources[i] != wantCtx.Sources[i] {
			t.Fatalf("message %d differs:\n got %s\nwant %s", i, a, b)
		}
	}
	if got.ThinkingLevel != wantCtx.ThinkingLevel || fmt.Sprint(got.Model) != fmt.Sprint(wantCtx.Model) {
		t.Fatalf("settings %v/%v, want %v/%v", got.ThinkingLevel, got.Model, wantCtx.ThinkingLevel, wantCtx.Model)
	}
	if !st2.Partial() {
		t.Fatal("building the context read the whole snapshot body")
	}
	if err := stream.Fallback(ctx, st2); err != nil {
		t.Fatalf("fell back: %v", err)
	}
	// Everything else still reads: the rest of the body on demand.
	all, err := st2.Entries(ctx)
	if err != nil || len(all) != len(entries)+len(tail) {
		t.Fatalf("entries after the context: %d, %v", len(all), err)
	}
}

// A long session read from the stream alone (written where snapshots were
// off) gets its snapshot when it is opened, so the next open is cheap.
func TestLongSessionOpenedFromTheStreamGetsASnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off := stream.DefaultConfig()
	off.SnapshotEvery, off.SnapshotOnCompaction = 0, false
	w := newBackendWith(t, off)
	h, entries := sessiongen.Generate(1200)
	st, err := w.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendBatch(ctx, entries[:1000]); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendBatch(ctx, entries[1000:]); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	on := stream.DefaultConfig()
	on.Stream, on.Prefix = w.Config().Stream, w.Config().Prefix
	r, err := stream.New(ctx, nc, on)
	if err != nil {
		t.Fatal(err)
	}
	st2, info, err := r.OpenStoreInfo(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.FromSnapshot {
		t.Fatal("a snapshot existed already")
	}
	waitSnapshot(t, st2)
	st2.Close(ctx)
	st3, info, err := r.OpenStoreInfo(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer st3.Close(ctx)
	if !info.FromSnapshot {
		t.Fatalf("the next open %+v did not use the snapshot", info)
	}
}

// A snapshot of the format before bodies were indexed is written again
// when its session is opened.
func TestSnapshotWithoutIndexIsRewritten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	h, entries := sessiongen.Generate(300)
	st, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendBatch(ctx, entries); err != nil {
		t.Fatal(err)
	}
	var src *snapshots.Source
	err = st.ReadTreeAt(ctx, func(tr *session.Tree, seq uint64) (err error) {
		src, err = snapshots.Capture(tr, 1, seq)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	if err := stream.SaveSnapshotFormat2(ctx, b, src, false); err != nil {
		t.Fatal(err)
	}
	st2, info, err := b.OpenStoreInfo(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	if !info.FromSnapshot {
		t.Fatalf("opened %+v, want from the old snapshot", info)
	}
	waitSnapshot(t, st2)
}

// waitSnapshot waits until st has written a snapshot in the background.
func waitSnapshot(t *testing.T, st *stream.Store) {
	t.Helper()
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if n, err := stream.SnapshotStatus(st); n == 0 || err != nil {
			return fmt.Errorf("%d snapshots written (%v)", n, err)
		}
		return nil
	})
}
