package stream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A publish that the server does not answer (the link to it paused) holds
// up no reader: Leaf, the context, Get and Stats answer at once from the
// entries applied before it, and the append lands once the link resumes.
func TestReadsDoNotWaitForAStalledPublish(t *testing.T) {
	proxy, err := clustertest.NewProxy(strings.TrimPrefix(node.ClientURL(), "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, b := backendOnConn(t, ctx, "nats://"+proxy.Addr(), 10*time.Second)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("stalled"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	sess, err := session.New(st, sessiontest.TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	var last *session.Entry
	for i := range 20 {
		if last, err = sess.AppendMessage(ctx, session.Message{Role: "user", Content: session.TextContent(fmt.Sprintf("message %d", i))}); err != nil {
			t.Fatal(err)
		}
	}

	proxy.SetPaused(true)
	done := make(chan error, 1)
	go func() {
		_, err := sess.AppendMessage(ctx, session.Message{Role: "user", Content: session.TextContent("stalled")})
		done <- err
	}()
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if proxy.Held() == 0 {
			return fmt.Errorf("the append has not reached the paused link")
		}
		return nil
	})

	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	defer rcancel()
	if leaf, err := st.Leaf(rctx); err != nil || leaf != last.ID {
		t.Fatalf("Leaf during the stalled publish: %q, %v; want %q", leaf, err, last.ID)
	}
	c, err := sess.BuildContext(rctx)
	if err != nil || len(c.Messages) != 20 {
		t.Fatalf("context during the stalled publish: %d messages, %v", len(c.Messages), err)
	}
	if _, err := st.Get(rctx, last.ID); err != nil {
		t.Fatalf("Get during the stalled publish: %v", err)
	}
	if s, err := st.Stats(rctx); err != nil || s.Entries != 20 {
		t.Fatalf("Stats during the stalled publish: %+v, %v", s, err)
	}
	select {
	case err := <-done:
		t.Fatalf("the append finished while the link was paused: %v", err)
	default:
	}

	proxy.SetPaused(false)
	if err := <-done; err != nil {
		t.Fatalf("append after the link resumed: %v", err)
	}
	if s, err := st.Stats(ctx); err != nil || s.Entries != 21 {
		t.Fatalf("after the append: %+v, %v", s, err)
	}
}
