package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// TestCatchUpWithin: a reader that accepts a bounded staleness is answered
// from the store as it is while it is known fresh enough — missing a
// write made elsewhere a moment ago, within the bound — and is synced
// once the bound has passed.
func TestCatchUpWithin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	other := newBackendOn(t, b.Config())
	defer other.Close(ctx)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("bounded"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if _, known := st.Staleness(); known {
		t.Fatal("a store never synced nor appended to claims to be fresh")
	}
	if err := st.Append(ctx, textEntry("mine", "")); err != nil {
		t.Fatal(err)
	}
	if lag, known := st.Staleness(); !known || lag > time.Minute {
		t.Fatalf("after its own append: staleness %v, known %v", lag, known)
	}
	// Another process writes.
	w, err := other.OpenStore(ctx, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	if err := w.Append(ctx, textEntry("theirs", "mine")); err != nil {
		t.Fatal(err)
	}
	leaf := func() string {
		l, err := st.Leaf(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Within the bound: answered as it is, without their write.
	if err := st.CatchUpWithin(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := leaf(); got != "mine" {
		t.Fatalf("a read within the bound synced: leaf %q", got)
	}
	// Past it (a bound of a nanosecond has passed by now): synced.
	if err := st.CatchUpWithin(ctx, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if got := leaf(); got != "theirs" {
		t.Fatalf("a read past the bound was not synced: leaf %q", got)
	}
	// And no bound is CatchUp.
	if err := w.Append(ctx, textEntry("third", "theirs")); err != nil {
		t.Fatal(err)
	}
	if err := st.CatchUpWithin(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := leaf(); got != "third" {
		t.Fatalf("CatchUpWithin(0) did not sync: leaf %q", got)
	}
}
