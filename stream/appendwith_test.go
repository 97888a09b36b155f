package stream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

func textEntry(id, parent string) *session.Entry {
	return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:00.000Z",
		Message: &session.Message{Role: "user", Timestamp: 1, Content: session.TextContent(id)}}
}

// Two stores of one session: b writes behind a's back, then a appends with
// each policy and precondition.
func TestAppendWithPoliciesAndPreconditions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bk := newBackend(t)
	tests := []struct {
		name       string
		opts       func(a *stream.Store) stream.AppendOptions
		parent     string // "" = a's leaf before b wrote
		wantErr    error
		wantParent string // where the entry ends up; "" = not stored
	}{
		{name: "return conflict", opts: func(*stream.Store) stream.AppendOptions { return stream.AppendOptions{Policy: stream.ReturnConflict} },
			wantErr: session.ErrConflict},
		{name: "rebase onto the new leaf", opts: func(*stream.Store) stream.AppendOptions { return stream.AppendOptions{Policy: stream.Rebase} },
			wantParent: "b1"},
		{name: "retry keeps the parent", opts: func(*stream.Store) stream.AppendOptions { return stream.AppendOptions{Policy: stream.Retry} },
			wantParent: "root"},
		{name: "stale precondition refused even with rebase", opts: func(a *stream.Store) stream.AppendOptions {
			seq, _ := a.Sequence(ctx)
			return stream.AppendOptions{Policy: stream.Rebase, IfSequence: seq}
		}, wantErr: session.ErrConflict},
		{name: "precondition from the future is caught up then met", opts: func(a *stream.Store) stream.AppendOptions {
			// The caller saw b's write elsewhere; a has not.
			last, _ := bk.StreamOf("a").Info(ctx)
			return stream.AppendOptions{IfSequence: last.State.LastSeq}
		}, wantParent: "root"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sessiontest.TestHeader("aw" + string(rune('a'+i)))
			a, err := bk.CreateStore(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(ctx)
			if err := a.Append(ctx, textEntry("root", "")); err != nil {
				t.Fatal(err)
			}
			b, err := bk.OpenStore(ctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(ctx)
			if err := b.Append(ctx, textEntry("b1", "root")); err != nil {
				t.Fatal(err)
			}
			e := textEntry("a1", "root")
			err = a.AppendWith(ctx, []*session.Entry{e}, tt.opts(a))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err := b.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			got, gerr := b.Get(ctx, "a1")
			switch {
			case tt.wantParent == "" && gerr == nil:
				t.Fatalf("a1 stored under %q, want nothing stored", got.ParentID)
			case tt.wantParent != "" && gerr != nil:
				t.Fatalf("a1 not stored: %v", gerr)
			case tt.wantParent != "" && got.ParentID != tt.wantParent:
				t.Fatalf("a1 parent = %q, want %q", got.ParentID, tt.wantParent)
			}
			var ce *session.ConflictError
			if errors.As(err, &ce) && ce.Leaf != "b1" {
				t.Fatalf("conflict leaf = %q, want b1", ce.Leaf)
			}
		})
	}
}

func TestSyncFollowsOtherWritersAndDeletes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bk := newBackend(t)
	h := sessiontest.TestHeader("sync")
	a, err := bk.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := bk.OpenStore(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if err := b.CatchUp(ctx); err != nil { // nothing new: no catch-up
		t.Fatal(err)
	}
	for _, id := range []string{"x1", "x2"} {
		leaf, _ := a.Leaf(ctx)
		if err := a.Append(ctx, textEntry(id, leaf)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Sequence(ctx)
	sb, _ := b.Sequence(ctx)
	if leaf, _ := b.Leaf(ctx); leaf != "x2" || sa != sb {
		t.Fatalf("after sync leaf %q seq %d, want x2 seq %d", leaf, sb, sa)
	}
	if err := bk.Delete(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.CatchUp(ctx); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("sync after delete: %v, want ErrSessionNotFound", err)
	}
}
