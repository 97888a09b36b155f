package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// snapshotObjects lists the objects of b's snapshots' store.
func snapshotObjects(t *testing.T, b *stream.Backend) []string {
	t.Helper()
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(context.Background(), b.Config().Stream+"_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	list, err := obs.List(context.Background())
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	return names
}

// A session's snapshots build on each other: each keeps the body segments
// of the one before and adds one for the entries since, so the body is a
// few segments, not one object written again whole. Every snapshot opens
// to the same session as the stream, its context read from the segments'
// chunks alone; nothing but the two snapshots the head names is kept, and
// a delete leaves nothing.
func TestSnapshotBodiesAreSegmented(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := snapshotBackend(t, 0)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("segs"))
	if err != nil {
		t.Fatal(err)
	}
	var most, reused int
	for round := 1; round <= 12; round++ {
		compactAt := -1
		if round == 12 {
			compactAt = 5 // the context at the leaf is the last few entries
		}
		fill(t, st, 10, compactAt)
		if err := st.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		object, prev, segs, prevSegs, err := stream.SnapshotHead(ctx, b, "segs")
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, len(segs))
		// Only the two snapshots of the head and their segments are kept.
		want := []string{object + ".skel"}
		if prev != "" {
			want = append(want, prev+".skel")
		}
		for _, s := range append(segs, prevSegs...) {
			if !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
		slices.Sort(want)
		// A snapshot whose context is shorter than its session has a tip
		// beside its skeleton (the round that compacts has).
		var got, tips []string
		for _, o := range snapshotObjects(t, b) {
			if strings.HasSuffix(o, ".tip") {
				tips = append(tips, o)
				continue
			}
			got = append(got, o)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: objects %v, want those the head names %v", round, got, want)
		}
		for _, tip := range tips {
			if tip != object+".tip" && (prev == "" || tip != prev+".tip") {
				t.Fatalf("round %d: tip %s of neither snapshot the head names (%s, %s)", round, tip, object, prev)
			}
		}
		if round == 12 && !slices.Contains(tips, object+".tip") {
			t.Fatalf("round %d: no tip for a compacted session's snapshot (objects %v)", round, tips)
		}
		if round > 1 && slices.Contains(prevSegs, segs[0]) {
			reused++
		}
	}
	// Segments merge by size (see planSegments): of 11 snapshots after
	// the first, those at 4, 6, 8, 10 and 12 keep the first segment.
	if most < 2 || reused < 4 {
		t.Fatalf("bodies of at most %d segments, %d snapshots kept a segment of the one before: not segmented", most, reused)
	}
	st.Close(ctx)

	want := rebuild(t, b, "segs")
	got, info, err := b.OpenStoreInfo(ctx, "segs")
	if err != nil {
		t.Fatal(err)
	}
	if !info.FromSnapshot || info.Tail != 0 {
		t.Fatalf("open info %+v, want the last snapshot and no tail", info)
	}
	// A branch across every segment but the last, and the context at the
	// leaf, are read from the segments' chunks alone.
	full, err := b.LoadTree(ctx, "segs")
	if err != nil {
		t.Fatal(err)
	}
	all := sessiontest.Entries(t, full.Tree)
	branch, err := got.ContextBranch(ctx, all[55].ID)
	if err != nil || len(branch) != 56 || branch[55].ID != all[55].ID {
		t.Fatalf("branch to entry 55: %d entries (%v), want 56", len(branch), err)
	}
	if !got.Partial() {
		t.Fatal("a branch read the whole body")
	}
	sess, err := session.New(got, system.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.BuildContext(ctx); err != nil {
		t.Fatal(err)
	}
	if fb := stream.Fallback(ctx, got); fb != nil {
		t.Fatalf("the context was not read from the segments: %v", fb)
	}
	if !bytes.Equal(encoded(t, got), want) {
		t.Fatal("the session opened from segments differs from the stream")
	}
	if fb := stream.Fallback(ctx, got); fb != nil {
		t.Fatalf("the body's segments were not read whole: %v", fb)
	}
	got.Close(ctx)

	if err := b.Delete(ctx, "segs"); err != nil {
		t.Fatal(err)
	}
	if left := snapshotObjects(t, b); len(left) != 0 {
		t.Fatalf("objects left after delete: %v", left)
	}
}

// Snapshots of format 2 (one body object, indexed or not) written by
// earlier versions open, give their context and entries, and the next
// snapshot of the session is of the current format.
func TestSnapshotFormat2IsRead(t *testing.T) {
	for _, indexed := range []bool{true, false} {
		t.Run(fmt.Sprint("indexed=", indexed), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b := snapshotBackend(t, 0)
			id := fmt.Sprint("old", indexed)
			st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
			if err != nil {
				t.Fatal(err)
			}
			fill(t, st, 30, 20)
			var src *snapshots.Source
			if err := st.ReadTreeAt(ctx, func(tr *session.Tree, seq uint64) (err error) {
				src, err = snapshots.Capture(tr, 1, seq)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			st.Close(ctx)
			if err := stream.SaveSnapshotFormat2(ctx, b, src, indexed); err != nil {
				t.Fatal(err)
			}
			want := rebuild(t, b, id)
			got, info, err := b.OpenStoreInfo(ctx, id)
			if err != nil || !info.FromSnapshot {
				t.Fatalf("open %+v %v, want from the old snapshot", info, err)
			}
			defer got.Close(ctx)
			full, err := b.LoadTree(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			mid := sessiontest.Entries(t, full.Tree)[9].ID
			if branch, err := got.ContextBranch(ctx, mid); err != nil || len(branch) != 10 {
				t.Fatalf("branch to entry 9: %d entries (%v)", len(branch), err)
			}
			if got.Partial() != indexed {
				t.Fatalf("after a branch the store is partial: %v; want %v (only an indexed body is read in part)", got.Partial(), indexed)
			}
			if !bytes.Equal(encoded(t, got), want) {
				t.Fatal("the session opened from an old snapshot differs from the stream")
			}
			if fb := stream.Fallback(ctx, got); fb != nil {
				t.Fatalf("the old body was not used: %v", fb)
			}
			if err := got.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, segs, _, err := stream.SnapshotHead(ctx, b, id); err != nil || len(segs) != 1 {
				t.Fatalf("the next snapshot's segments %v (%v), want one of the current format", segs, err)
			}
		})
	}
}

// Two writers snapshot one session in turn: a backend builds on the
// segments it remembers only while the snapshot it remembers is current.
// Here the first writes a snapshot of 100 entries; the second, which
// opened the session before and remembers none, writes two (the first
// whole, which retires the segment the first writer remembers); the first
// then writes again and must not name the deleted segment.
func TestSnapshotsOfTwoWritersInTurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b1 := snapshotBackend(t, 0)
	b2, err := stream.New(ctx, nc, b1.Config())
	if err != nil {
		t.Fatal(err)
	}
	st1, err := b1.CreateStore(ctx, sessiontest.TestHeader("turns"))
	if err != nil {
		t.Fatal(err)
	}
	defer st1.Close(ctx)
	st2, err := b2.OpenStore(ctx, "turns")
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	snap := func(st *stream.Store, n int) {
		t.Helper()
		if err := st.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		fill(t, st, n, -1)
		if err := st.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	snap(st1, 100)
	snap(st2, 5)
	snap(st2, 5)
	snap(st1, 5)
	want := rebuild(t, b1, "turns")
	for _, b := range []*stream.Backend{b1, b2} {
		got, info, err := b.OpenStoreInfo(ctx, "turns")
		if err != nil || !info.FromSnapshot || info.Tail != 0 {
			t.Fatalf("open %+v %v, want the last snapshot", info, err)
		}
		if !bytes.Equal(encoded(t, got), want) {
			t.Fatal("the last snapshot differs from the stream")
		}
		if fb := stream.Fallback(ctx, got); fb != nil {
			t.Fatalf("the last snapshot's body was not read: %v", fb)
		}
		got.Close(ctx)
	}
}

// A snapshot whose body turns out bad is not built on: once a store has
// fallen back to the stream, the session's next snapshot is written whole
// and opens with its body (a segment it kept would be missing still).
func TestBadBodyIsNotBuiltOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := snapshotBackend(t, 0)
	snapshotted(t, b, "healing", 40)
	object, _, segs, _, err := stream.SnapshotHead(ctx, b, "healing")
	if err != nil || len(segs) != 1 {
		t.Fatalf("head %s segments %v (%v)", object, segs, err)
	}
	js, _ := jetstream.New(nc)
	obs, _ := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
	if err := obs.Delete(ctx, segs[0]); err != nil {
		t.Fatal(err)
	}
	st, info, err := b.OpenStoreInfo(ctx, "healing")
	if err != nil || !info.FromSnapshot {
		t.Fatalf("open %+v %v", info, err)
	}
	if _, err := st.Entries(ctx); err != nil {
		t.Fatal(err)
	}
	if fb := stream.Fallback(ctx, st); fb == nil {
		t.Fatal("a missing segment was not noticed")
	}
	fill(t, st, 3, -1) // fewer than half the body: a kept segment would stay
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	got, info, err := b.OpenStoreInfo(ctx, "healing")
	if err != nil || !info.FromSnapshot {
		t.Fatalf("reopen %+v %v", info, err)
	}
	defer got.Close(ctx)
	if !bytes.Equal(encoded(t, got), rebuild(t, b, "healing")) {
		t.Fatal("the new snapshot differs from the stream")
	}
	if fb := stream.Fallback(ctx, got); fb != nil {
		t.Fatalf("the snapshot after a bad one still names its missing segment: %v", fb)
	}
}

// A snapshot of a large session is encoded and uploaded a segment of at
// most 16 MiB (and one entry) at a time, never as one body in memory;
// it opens to the same session. Before, a 40 MB session's snapshot was
// one 40 MB object encoded whole (135 MB in use under a writer's flood).
func TestLargeSnapshotsAreWrittenInBoundedSegments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := snapshotBackend(t, 0)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("big"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("y", 100<<10) // inline: below the offload threshold
	for i := range 400 {
		e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("m%04d", i), Timestamp: "2026-12-05T00:00:00.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(text), Timestamp: 1}}
		if i > 0 {
			e.ParentID = fmt.Sprintf("m%04d", i-1)
		}
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	list, err := obs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bodies := 0
	for _, o := range list {
		if strings.Contains(o.Name, ".body") {
			bodies++
			if o.Size > 16<<20+200<<10 {
				t.Errorf("segment %s holds %d bytes, past 16 MiB and an entry", o.Name, o.Size)
			}
		}
	}
	if bodies < 3 {
		t.Fatalf("a 40 MB body in %d segment(s), want at least 3", bodies)
	}
	want := rebuild(t, b, "big")
	got, info, err := b.OpenStoreInfo(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close(ctx)
	if !info.FromSnapshot || !bytes.Equal(encoded(t, got), want) {
		t.Fatalf("opened from the snapshot (%v), the session differs from the stream", info.FromSnapshot)
	}
}

// A store opened from a snapshot writes its next snapshot without loading
// the entries that snapshot holds: the new one keeps its segments and
// adds the entries since. A session written for long is then never
// loaded whole to be snapshotted (the service reopens one that grew past
// its cache's bound). Before, every snapshot loaded the tree.
func TestSnapshotOfAPartialStoreKeepsItPartial(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := snapshotBackend(t, 0)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("part"))
	if err != nil {
		t.Fatal(err)
	}
	fill(t, st, 40, -1)
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	got, info, err := b.OpenStoreInfo(ctx, "part")
	if err != nil || !info.FromSnapshot || !got.Partial() {
		t.Fatalf("open: %v, info %+v, partial %v", err, info, got != nil && got.Partial())
	}
	leaf, _ := got.Leaf(ctx)
	for i := range 20 {
		e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("late%02d", i), ParentID: leaf, Timestamp: "2026-12-05T00:00:00.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("late"), Timestamp: 1}}
		if err := got.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		leaf = e.ID
	}
	if err := got.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if !got.Partial() {
		t.Fatal("writing a snapshot loaded the whole tree")
	}
	got.Close(ctx)
	want := rebuild(t, b, "part")
	again, info, err := b.OpenStoreInfo(ctx, "part")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	if !info.FromSnapshot || info.Tail != 0 || !bytes.Equal(encoded(t, again), want) {
		t.Fatalf("the snapshot of the partial store (info %+v) does not open to the session", info)
	}
}
