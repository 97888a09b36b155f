package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// listAll pages through b's whole listing, limit at a time, and returns
// the ids in the order listed.
func listAll(t *testing.T, ctx context.Context, b *stream.Backend, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		page, err := b.List(ctx, session.ListOptions{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if cursor = page.Next; cursor == "" {
			return ids
		}
	}
}

// Each listing reflects every create, append and delete made before it.
func TestListingFollowsWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	all := func() []string { return listAll(t, ctx, b, 7) }
	if got := all(); len(got) != 0 {
		t.Fatalf("empty stream lists %v", got)
	}
	for i := range 20 {
		h := sessiontest.TestHeader(fmt.Sprintf("s%02d", i))
		h.Timestamp = fmt.Sprintf("2025-01-01T00:00:%02d.000Z", i)
		st, err := b.CreateStore(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
		// Each listing sees the session created just before it.
		if got := all(); len(got) != i+1 || got[0] != h.ID {
			t.Fatalf("after creating %s: %v", h.ID, got)
		}
	}
	// An append moves a session to the front.
	st, err := b.OpenStore(ctx, "s03")
	if err != nil {
		t.Fatal(err)
	}
	late := textEntry("late", "")
	late.Timestamp = "2025-01-01T00:01:00.000Z"
	if err := st.Append(ctx, late); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	got := all()
	if len(got) != 20 || got[0] != "s03" || got[1] != "s19" || got[19] != "s00" {
		t.Fatalf("after appending to s03: %v", got)
	}
	if err := b.Delete(ctx, "s10"); err != nil {
		t.Fatal(err)
	}
	for _, id := range all() {
		if id == "s10" {
			t.Fatal("deleted session still listed")
		}
	}
	// A second backend (another process) lists the same.
	other := newBackendOn(t, b.Config())
	defer other.Close(ctx)
	page, err := other.List(ctx, session.ListOptions{Limit: 3})
	if err != nil || len(page.Sessions) != 3 || page.Sessions[0].ID != "s03" {
		t.Fatalf("other backend: %+v %v", page, err)
	}
	// After Close a backend does not list.
	b.Close(ctx)
	if _, err := b.List(ctx, session.ListOptions{}); err == nil {
		t.Fatal("listed after Close")
	}
}

// A page costs what it shows: listing reads the index from its tail, not
// the whole of it, on the first page as on later ones, and wherever the
// sessions' own timestamps put them.
func TestListingReadsOnlyItsPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, partitions := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d partitions", partitions), func(t *testing.T) {
			cfg := stream.DefaultConfig()
			cfg.Partitions = partitions
			b := newBackendWith(t, cfg)
			defer b.Close(ctx)
			const n = 600
			for i := range n {
				h := sessiontest.TestHeader(fmt.Sprintf("r%03d", i))
				// Timestamps against write order: an import of old sessions.
				h.Timestamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(i) * time.Minute).Format("2006-01-02T15:04:05.000Z")
				st, err := b.CreateStore(ctx, h)
				if err != nil {
					t.Fatal(err)
				}
				st.Close(ctx)
			}
			other := newBackendOn(t, b.Config()) // a new process
			defer other.Close(ctx)
			before := stream.ListReads(other)
			page, err := other.List(ctx, session.ListOptions{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Sessions) != 10 || page.Sessions[0].ID != fmt.Sprintf("r%03d", n-1) || page.Next == "" {
				t.Fatalf("first page: %+v", page)
			}
			first := stream.ListReads(other) - before
			// Each partition reads a window of its tail (64 records here).
			if first > uint64(partitions*64) {
				t.Fatalf("the first page of 10 read %d of %d index records", first, n)
			}
			before = stream.ListReads(other)
			next, err := other.List(ctx, session.ListOptions{Limit: 10, Cursor: page.Next})
			if err != nil {
				t.Fatal(err)
			}
			if len(next.Sessions) != 10 || next.Sessions[0].ID != fmt.Sprintf("r%03d", n-11) {
				t.Fatalf("second page: %+v", next)
			}
			if got := stream.ListReads(other) - before; got > uint64(partitions*64) {
				t.Fatalf("the second page of 10 read %d of %d index records", got, n)
			}
		})
	}
}

// A cursor that no listing returned is refused, naming it.
func TestListingRefusesBadCursor(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	defer b.Close(ctx)
	for _, c := range []string{"nobar", "yesterday|s1", "|s1"} {
		_, err := b.List(ctx, session.ListOptions{Cursor: c})
		if !errors.Is(err, session.ErrInvalidConfig) || !strings.Contains(err.Error(), c) {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
}

// A page resumes where the last one stopped even when the session its
// cursor names was written to or deleted in between.
func TestListingResumesAfterCursorSessionChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sessiontest.EachLayout(t, func(t *testing.T, partitions int) {
		cfg := stream.DefaultConfig()
		cfg.Partitions = partitions
		b := newBackendWith(t, cfg)
		defer b.Close(ctx)
		for i := range 20 {
			st, err := b.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("s%02d", i)))
			if err != nil {
				t.Fatal(err)
			}
			st.Close(ctx)
		}
		ids := func(p session.ListPage) (out []string) {
			for _, in := range p.Sessions {
				out = append(out, in.ID)
			}
			return out
		}
		page := func(cursor string) session.ListPage {
			p, err := b.List(ctx, session.ListOptions{Limit: 5, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		p1 := page("")
		if got := ids(p1); !slices.Equal(got, []string{"s19", "s18", "s17", "s16", "s15"}) {
			t.Fatalf("page 1: %v", got)
		}
		st, err := b.OpenStore(ctx, "s15") // the cursor's session moves to the front
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ctx, textEntry("moved", "")); err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
		p2 := page(p1.Next)
		if got := ids(p2); !slices.Equal(got, []string{"s14", "s13", "s12", "s11", "s10"}) {
			t.Fatalf("page 2 after the cursor's session was written to: %v", got)
		}
		if err := b.Delete(ctx, "s10"); err != nil {
			t.Fatal(err)
		}
		if got := ids(page(p2.Next)); !slices.Equal(got, []string{"s09", "s08", "s07", "s06", "s05"}) {
			t.Fatalf("page 3 after the cursor's session was deleted: %v", got)
		}
	})
}

// Sessions written to again leave their old index records' sequences
// empty: a listing crosses those gaps without reading much more than it
// lists, and lists each session once, most recently indexed first.
func TestListingCrossesGaps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	js := b.JetStream()
	put := func(i int) {
		rec := fmt.Sprintf(`{"id":"g%03d","created":"2025-01-01T00:00:00.000Z","updated":"2025-01-01T00:00:00.000Z","entries":1,"seq":1}`, i)
		if _, err := js.Publish(ctx, "$KV."+b.Config().IndexBucket()+fmt.Sprintf(".g%03d", i), []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	const n, rewritten = 400, 350
	for i := range n {
		put(i)
	}
	for range 4 { // the first 350 again and again: 1400 empty sequences
		for i := range rewritten {
			put(i)
		}
	}
	var want []string
	for i := rewritten - 1; i >= 0; i-- {
		want = append(want, fmt.Sprintf("g%03d", i))
	}
	for i := n - 1; i >= rewritten; i-- {
		want = append(want, fmt.Sprintf("g%03d", i))
	}
	other := newBackendOn(t, b.Config())
	defer other.Close(ctx)
	got := listAll(t, ctx, other, 25)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d sessions: %v…, want %d: %v…", len(got), got[:min(5, len(got))], len(want), want[:5])
	}
	if reads := stream.ListReads(other); reads > 2*n {
		t.Fatalf("listing %d sessions read %d index records", n, reads)
	}
}
