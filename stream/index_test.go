package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
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

// TestIndexFollowerCoversForeignWrites: a session written to the stream
// by something that keeps no index — a writer that died before its
// record was written, a client publishing by itself — is listed all the
// same once the index follower has seen its messages; a backend without
// the follower never lists it.
func TestIndexFollowerCoversForeignWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t, stream.WithIndexFollower())
	defer b.Close(ctx)
	js, _ := jetstream.New(nc)
	cfg := b.Config()
	// The follower's consumer starts from new messages: let it be made.
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		_, err := js.Consumer(ctx, cfg.StreamOf("foreign"), "sessionlog-index")
		return err
	})
	publish := func(data []byte, expect uint64) uint64 {
		t.Helper()
		ack, err := js.Publish(ctx, cfg.SessionSubjects("foreign"), data, jetstream.WithExpectLastSequenceForSubject(expect, cfg.SessionSubjects("foreign")))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	h := sessiontest.TestHeader("foreign")
	hb, err := codec.EncodeHeaderMsgpack(&h)
	if err != nil {
		t.Fatal(err)
	}
	seq := publish(hb, 0)
	for _, id := range []string{"f1", "f2"} {
		parent := ""
		if id == "f2" {
			parent = "f1"
		}
		eb, err := codec.EncodeEntryMsgpack(textEntry(id, parent))
		if err != nil {
			t.Fatal(err)
		}
		seq = publish(eb, seq)
	}
	// Nothing indexed it; the follower does, once the messages settle.
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		page, err := b.List(ctx, session.ListOptions{})
		if err != nil {
			return err
		}
		for _, s := range page.Sessions {
			if s.ID == "foreign" && s.Entries == 2 && s.Leaf == "f2" {
				return nil
			}
		}
		n, ferr := b.IndexRepairs()
		return fmt.Errorf("not listed as it is: %+v (follower: %d repairs, last error %v)", page.Sessions, n, ferr)
	})
	if n, err := b.IndexRepairs(); n != 1 || err != nil {
		t.Fatalf("index repairs %d (%v), want 1", n, err)
	}
	// A session its writer indexed costs the follower one read, no write.
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("own"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, textEntry("o1", "")); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	probe, err := b.CreateStore(ctx, sessiontest.TestHeader("later"))
	if err != nil {
		t.Fatal(err)
	}
	probe.Close(ctx)
	// Once the follower is past "later" (its consumer has nothing
	// pending), it has judged "own" too.
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		c, err := js.Consumer(ctx, cfg.StreamOf("own"), "sessionlog-index")
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("follower behind: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	if n, _ := b.IndexRepairs(); n != 1 {
		t.Fatalf("the follower rewrote records their writers had written: %d repairs", n)
	}
}
