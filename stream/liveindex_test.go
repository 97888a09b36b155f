package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Listings come from the index held in memory after the first call; each
// still reflects every create, append and delete made before it.
func TestListingFollowsWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	all := func() []string {
		var ids []string
		cursor := ""
		for {
			page, err := b.List(ctx, session.ListOptions{Limit: 7, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Sessions {
				ids = append(ids, s.ID)
			}
			if page.Next == "" {
				return ids
			}
			cursor = page.Next
		}
	}
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
