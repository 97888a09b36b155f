package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// TestWritesDoNotWaitForTheIndex: the index is a raft group of its own;
// with it out of reach (its stream gone, here), sessions are still
// created and appended to, and only listings fail. Once it is back, the
// records the writers could not write are written, without another
// write to the sessions.
func TestWritesDoNotWaitForTheIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	js, _ := jetstream.New(nc)
	kvStream := "KV_" + b.Config().IndexBucket()
	info, err := js.Stream(ctx, kvStream)
	if err != nil {
		t.Fatal(err)
	}
	kvConfig := info.CachedInfo().Config
	if err := js.DeleteStream(ctx, kvStream); err != nil {
		t.Fatal(err)
	}

	st, err := b.CreateStore(ctx, sessiontest.TestHeader("unindexed"))
	if err != nil {
		t.Fatalf("create waited for the index: %v", err)
	}
	defer st.Close(ctx)
	if err := st.Append(ctx, textEntry("e1", "")); err != nil {
		t.Fatalf("append waited for the index: %v", err)
	}
	if _, err := b.List(ctx, session.ListOptions{}); err == nil {
		t.Fatal("listed an index that is not there")
	}

	// The index comes back: the writer's record reaches it on its own.
	if _, err := js.CreateStream(ctx, kvConfig); err != nil {
		t.Fatal(err)
	}
	other := newBackendOn(t, b.Config())
	defer other.Close(ctx)
	sessiontest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		page, err := other.List(ctx, session.ListOptions{})
		if err != nil {
			return err
		}
		if len(page.Sessions) != 1 || page.Sessions[0].Entries != 1 || page.Sessions[0].Leaf != "e1" {
			return fmt.Errorf("listed %+v", page.Sessions)
		}
		return nil
	})
}
