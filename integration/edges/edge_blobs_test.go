package edges

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/blobs"
)

// Content stored apart (images, large tool results) crosses the link
// with the entries that name it, both ways: each side reads the other's,
// names it again in entries of its own, and collects it by its own rule
// alone — a blob the other side collected stays readable here while an
// entry here names it.
func TestBlobsCrossTheLink(t *testing.T) {
	ctx := context.Background()
	p := newLinkedPair(t, func(c *stream.Config) { c.BlobGrace = time.Second })
	large := func(who string) string {
		var b strings.Builder
		for i := 0; b.Len() < 300<<10; i++ {
			fmt.Fprintf(&b, "%s: line %d of a large tool result\n", who, i)
		}
		return b.String()
	}
	entry := func(id, parent, text string) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: nowStamp(),
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(text), Timestamp: time.Now().UnixMilli()}}
	}
	write := func(b *stream.Backend, id string, e *session.Entry) {
		t.Helper()
		st, err := b.CreateStore(ctx, session.Header{ID: id, Timestamp: nowStamp(), Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// stored is entry id of session as stored (references in place).
	stored := func(b *stream.Backend, session, id string) *session.Entry {
		t.Helper()
		st, err := b.OpenStore(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		e, err := st.Refs().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	read := func(b *stream.Backend, session, id string) (string, error) {
		st, err := b.OpenStore(ctx, session)
		if err != nil {
			return "", err
		}
		defer st.Close(ctx)
		e, err := st.Get(ctx, id)
		if err != nil {
			return "", err
		}
		return e.Message.Text(), nil
	}
	reads := func(b *stream.Backend, session, id, want string) func() error {
		return func() error {
			got, err := read(b, session, id)
			if err == nil && got != want {
				err = fmt.Errorf("%s/%s reads %d bytes, not the %d written", session, id, len(got), len(want))
			}
			return err
		}
	}

	onLaptop, atHub := large("laptop"), large("hub")
	write(p.eb, "laptop-shots", entry("l1", "", onLaptop))
	write(p.hb, "hub-shots", entry("h1", "", atHub))
	if len(stored(p.eb, "laptop-shots", "l1").BlobRefs()) == 0 {
		t.Fatal("the large entry was stored inline: nothing of this test crosses as a blob")
	}
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, reads(p.hb, "laptop-shots", "l1", onLaptop))
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, reads(p.eb, "hub-shots", "h1", atHub))

	// The laptop deletes its session and collects its blob (and its own
	// blob come back from the hub); the hub reads its copy of the session
	// all the same.
	if _, err := p.eb.DeleteSession(ctx, "laptop-shots"); err != nil {
		t.Fatal(err)
	}
	collected := 0
	sessiontest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		st, err := p.eb.CollectBlobs(ctx)
		if collected += st.Deleted; err == nil && collected < 2 {
			err = fmt.Errorf("the laptop has collected %d of its blob and the copy that came back: %+v", collected, st)
		}
		return err
	})
	if got, err := read(p.hb, "laptop-shots", "l1"); err != nil || got != onLaptop {
		t.Fatalf("after the laptop collected its blob the hub reads laptop-shots/l1 as %d bytes (%v)", len(got), err)
	}
	// And in pieces, as a client that cannot take it whole reads it.
	ref := stored(p.hb, "laptop-shots", "l1").BlobRefs()[0]
	var whole []byte
	for next := uint64(0); ; {
		piece, err := p.hb.Blobs().ReadPiece(ctx, ref.SHA256, next, 100<<10)
		if err != nil {
			t.Fatalf("a piece of the received blob at the hub: %v", err)
		}
		if piece.Size != ref.Size {
			t.Fatalf("the received blob is %d bytes in pieces, %d by its reference", piece.Size, ref.Size)
		}
		whole = append(whole, piece.Data...)
		if next = piece.Next; next == 0 {
			break
		}
	}
	if got := session.NewBlobRef(whole, ref.Encoding); got.SHA256 != ref.SHA256 || got.Size != ref.Size {
		t.Fatalf("read in pieces: %d bytes of %d, SHA-256 %s", len(whole), ref.Size, got.SHA256)
	}

	// Named again at the hub by reference alone: the blob is the hub's
	// own from then, and reaches the laptop again as the hub's.
	again := stored(p.hb, "laptop-shots", "l1")
	again.ID = "copy"
	write(p.hb, "hub-copy", again)
	if got, err := read(p.hb, "hub-copy", "copy"); err != nil || got != onLaptop {
		t.Fatalf("the copy at the hub reads %d bytes (%v)", len(got), err)
	}
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, reads(p.eb, "hub-copy", "copy", onLaptop))

	// The hub collects what it received only once no entry of its own
	// names it.
	time.Sleep(1500 * time.Millisecond) // past the grace period, as a day later
	if st, err := p.hb.CollectBlobs(ctx); err != nil || st.Received == 0 || st.Deleted != 0 {
		t.Fatalf("the hub's collection while entries name its blobs: %+v, %v (want blobs received, none deleted)", st, err)
	}
	deleted := 0
	for _, id := range []string{"laptop-shots", "hub-copy"} {
		rep, err := p.hb.DeleteSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		deleted += rep.BlobsDeleted
	}
	time.Sleep(1500 * time.Millisecond)
	st, err := p.hb.CollectBlobs(ctx)
	if deleted += st.Deleted; err != nil || deleted != 2 || st.Received != 0 {
		t.Fatalf("nothing at the hub names the laptop's blob, yet it stays (received, or the hub's copy): %d deleted, then %+v (%v)", deleted, st, err)
	}
	again.ID = "after"
	st2, err := p.hb.CreateStore(ctx, session.Header{ID: "too-late", Timestamp: nowStamp(), Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	if err := st2.Append(ctx, again); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("a reference to a blob collected on both sides: %v, want ErrBlobNotFound", err)
	}
}
