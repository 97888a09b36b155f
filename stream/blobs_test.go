package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// A context naming one blob many times reads it once, even with no cache
// to keep it; by reference it reads none.
func TestContextReadsEachBlobOnce(t *testing.T) {
	ctx := context.Background()
	cfg := stream.DefaultConfig()
	cfg.OffloadThreshold, cfg.BlobCacheBytes = 100, 0
	w := newBackendWith(t, cfg)
	st, err := w.CreateStore(ctx, header("s", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	same := bigText("q")
	parent := ""
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		e := &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2026-01-01T00:00:00.000Z",
			Message: &session.Message{Role: session.RoleUser, Timestamp: 1, Content: session.TextContent(same)}}
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		parent = id
	}
	st.Close(ctx)
	cfg.Stream, cfg.Prefix = w.Config().Stream, w.Config().Prefix
	r, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := r.OpenStore(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	sess, err := session.New(st2, system.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.BuildContext(ctx, session.WithBlobRefs()); err != nil || stream.BlobFetches(r) != 0 {
		t.Fatalf("by reference: %v, %d fetches", err, stream.BlobFetches(r))
	}
	c, err := sess.BuildContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Messages {
		if m.Text() != same {
			t.Fatal("a message did not resolve")
		}
	}
	if n := stream.BlobFetches(r); n != 1 {
		t.Fatalf("the blob named 4 times was read %d times", n)
	}
}
