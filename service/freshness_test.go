package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// TestReplicaReads: a "replica" read is answered from the instance's copy
// while that copy is known fresh within the bound — without asking the
// stream anything, where a linearizable read asks it for the session's
// last message (after writing a barrier, on a cluster) — and may then
// miss a write made through another instance, never by more than the
// bound.
func TestReplicaReads(t *testing.T) {
	a := start(t, nil)
	b := a.another(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(nc)
	str, err := js.Stream(ctx, a.b.Config().Streams()[0])
	if err != nil {
		t.Fatal(err)
	}
	// Every question to the stream for its messages is a direct get.
	asked, err := nc.SubscribeSync("$JS.API.DIRECT.GET." + a.b.Config().Streams()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer asked.Unsubscribe()
	questions := func() int {
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, err := asked.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	streamLast := func() uint64 {
		info, err := str.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}

	var s api.SessionReply
	a.call(t, api.OpCreate, api.CreateRequest{}, &s)
	id := s.Session.ID
	var mine api.AppendReply
	a.call(t, api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi)}, &mine)

	// Right after its own append, a's copy is fresh: replica reads of
	// every kind write nothing to the stream.
	replica := api.Freshness{Consistency: api.Replica, MaxLagMs: 60_000}
	before, askedBefore := streamLast(), questions()
	for range 5 {
		var o api.SessionReply
		a.call(t, api.OpOpen, api.SessionRequest{Session: id, Freshness: replica}, &o)
		if o.Session.Leaf != mine.Leaf {
			t.Fatalf("replica open misses the instance's own append: leaf %q, want %q", o.Session.Leaf, mine.Leaf)
		}
		a.call(t, api.OpContext, api.ContextRequest{Session: id, Freshness: replica}, nil)
		a.call(t, api.OpTree, api.TreeRequest{Session: id, Freshness: replica}, nil)
		a.call(t, api.OpEntries, api.EntriesRequest{Session: id, Freshness: replica}, nil)
		a.call(t, api.OpGet, api.GetRequest{Session: id, Entry: mine.Leaf, Freshness: replica}, nil)
		a.call(t, api.OpStats, api.StatsRequest{Session: id, Freshness: replica}, nil)
	}
	if after := streamLast(); after != before {
		t.Fatalf("replica reads wrote %d messages to the stream", after-before)
	}
	if n := questions() - askedBefore; n != 0 {
		t.Fatalf("replica reads asked the stream %d times", n)
	}
	// A linearizable read asks the stream; on this server alone, without
	// a barrier.
	a.call(t, api.OpOpen, api.SessionRequest{Session: id}, nil)
	if n := questions() - askedBefore; n < 1 {
		t.Fatal("a linearizable read did not ask the stream")
	}
	if after := streamLast(); after != before {
		t.Fatalf("a linearizable read of a stream on one server alone wrote %d messages to it", after-before)
	}

	// b writes; a's copy, synced a moment ago, may answer without it
	// within a minute's bound, and must see it once the bound is short.
	var theirs api.AppendReply
	b.call(t, api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi)}, &theirs)
	var o api.SessionReply
	a.call(t, api.OpOpen, api.SessionRequest{Session: id, Freshness: replica}, &o)
	if o.Session.Leaf != mine.Leaf {
		t.Fatalf("within the bound the copy was synced anyway (leaf %q): the read wrote a barrier", o.Session.Leaf)
	}
	sessiontest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		var o api.SessionReply
		a.call(t, api.OpOpen, api.SessionRequest{Session: id, Freshness: api.Freshness{Consistency: api.Replica, MaxLagMs: 1}}, &o)
		if o.Session.Leaf != theirs.Leaf {
			return errors.New("a replica read with a 1 ms bound still misses b's append")
		}
		return nil
	})
	a.call(t, api.OpOpen, api.SessionRequest{Session: id}, &o)
	if o.Session.Leaf != theirs.Leaf {
		t.Fatalf("linearizable read: leaf %q, want %q", o.Session.Leaf, theirs.Leaf)
	}
}

// TestFreshnessRefused: what a read's freshness may not be, each refused
// naming the member.
func TestFreshnessRefused(t *testing.T) {
	f := start(t, nil)
	var s api.SessionReply
	f.call(t, api.OpCreate, api.CreateRequest{}, &s)
	id := s.Session.ID
	for _, c := range []struct {
		name, op, body, field string
	}{
		{"unknown consistency", api.OpOpen, `{"session":"` + id + `","consistency":"eventual"}`, "/consistency"},
		{"bound on a linearizable read", api.OpContext, `{"session":"` + id + `","maxLagMs":100}`, "/maxLagMs"},
		{"negative bound", api.OpTree, `{"session":"` + id + `","consistency":"replica","maxLagMs":-1}`, "/maxLagMs"},
		{"bound over a minute", api.OpEntries, `{"session":"` + id + `","consistency":"replica","maxLagMs":60001}`, "/maxLagMs"},
		{"bound of the wrong kind", api.OpGet, `{"session":"` + id + `","entry":"x","consistency":"replica","maxLagMs":"soon"}`, "/maxLagMs"},
		{"freshness on a delete", api.OpDelete, `{"session":"` + id + `","consistency":"replica"}`, "/consistency"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := f.raw(c.op, c.body)
			var se *api.Error
			if !errors.As(err, &se) || se.Code != api.CodeBadRequest || se.Field != c.field {
				t.Fatalf("%s %s: %v, want bad_request at %s", c.op, c.body, err, c.field)
			}
		})
	}
	// The session is still there, and a replica read with the default
	// bound answers.
	f.call(t, api.OpStats, api.StatsRequest{Session: id, Freshness: api.Freshness{Consistency: api.Replica}}, nil)
}
