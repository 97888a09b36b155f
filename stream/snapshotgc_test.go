package stream_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// headNames is what session id's head names: its current and previous
// skeletons and their segments.
func headNames(t *testing.T, b *stream.Backend, id string) []string {
	t.Helper()
	object, prev, segs, prevSegs, err := stream.SnapshotHead(context.Background(), b, id)
	if err != nil {
		t.Fatal(err)
	}
	names := append([]string{object + ".skel"}, segs...)
	if prev != "" {
		names = append(append(names, prev+".skel"), prevSegs...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// A save that stops between its objects and its head (the node stopping)
// deletes its objects on the way out: none is left that no head names.
func TestSnapshotCutShortLeavesNothing(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 0)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("cut-short"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	fill(t, st, 20, -1)
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	named := headNames(t, b, "cut-short")
	fill(t, st, 20, -1)
	saveCtx, stop := context.WithCancel(ctx)
	stream.OnSnapshotHead(b, func(string) { stop() })
	if err := st.Snapshot(saveCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a save stopped before its head: %v, want context.Canceled", err)
	}
	if got := snapshotObjects(t, b); !slices.Equal(got, named) {
		t.Fatalf("objects after a save cut short: %v\nwant those the head names: %v", got, named)
	}
}

// CollectSnapshots deletes the objects no head names once past the grace
// period, and nothing else: not the current or previous snapshot's, not
// the young, not those of a head it cannot read.
func TestCollectSnapshotsDeletesOnlyOrphans(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 10)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("gc-kept"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		fill(t, st, 10, -1)
		if err := st.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := encoded(t, st)
	st.Close(ctx)
	named := headNames(t, b, "gc-kept")
	// What a later format may keep beside a snapshot's skeleton is its.
	current, _, _, _, _ := stream.SnapshotHead(ctx, b, "gc-kept")
	beside := current + ".future"

	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, b.Config().SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	heads, err := js.KeyValue(ctx, b.Config().SnapshotBucket()+"_HEADS")
	if err != nil {
		t.Fatal(err)
	}
	orphans := []string{
		"gc-kept-1-99-ORPHAN.skel",   // a save of a session with a head, cut short
		"gc-kept-1-99-ORPHAN.body",   // and its body
		"gc-gone-1-5-ORPHAN.tip",     // of a session that has no head
		"gc-kept-1-1-OLDPREV.body.3", // a segment a deletion missed
	}
	protected := []string{"gc-unread-1-3-X.skel", "gc-unread-1-3-X.newkind"}
	for _, name := range append(slices.Concat(orphans, protected), beside) {
		if _, err := obs.PutBytes(ctx, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	// A head of a newer format, or damaged: what it names is not known.
	if _, err := heads.Put(ctx, "gc-unread", []byte(`{"object":`)); err != nil {
		t.Fatal(err)
	}

	all, err := b.CollectSnapshots(ctx, stream.WithGrace(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if all.Deleted != 0 || all.Young != len(orphans) || all.Protected != len(protected) || all.Named != len(named)+1 {
		t.Fatalf("within the grace period: %+v; want %d named, %d young, %d protected, none deleted", all, len(named)+1, len(orphans), len(protected))
	}
	if _, err := b.CollectSnapshots(ctx, stream.WithGrace(0)); err == nil {
		t.Fatal("a grace period of 0 collected")
	}

	time.Sleep(5 * time.Millisecond) // the orphans older than the grace below
	all, err = b.CollectSnapshots(ctx, stream.WithGrace(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if all.Deleted != len(orphans) || all.Young != 0 || all.Freed == 0 {
		t.Fatalf("past the grace period: %+v; want the %d orphans deleted", all, len(orphans))
	}
	left := slices.Concat(named, protected, []string{beside})
	slices.Sort(left)
	if got := snapshotObjects(t, b); !slices.Equal(got, left) {
		t.Fatalf("left after collection: %v\nwant: %v", got, left)
	}
	// The session still opens from its snapshot, whole.
	st, err = b.OpenStore(ctx, "gc-kept")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if got := encoded(t, st); string(got) != string(want) {
		t.Fatal("the session differs after collection")
	}
	if err := stream.Fallback(ctx, st); err != nil {
		t.Fatalf("the snapshot was not used after collection: %v", err)
	}
}
