package service_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
)

// another is a second instance over the fixture's stream, with a cache
// of its own (another node of a deployment), closed when the test ends.
func (f *fixture) another(t *testing.T) *fixture {
	t.Helper()
	cfg := f.cfg
	cfg.Subject, cfg.QueueGroup = cfg.Subject+"b", cfg.QueueGroup+"b"
	other, err := service.Start(context.Background(), nc, f.b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	return &fixture{b: f.b, svc: other, c: api.NewClient(nc, cfg.Subject), cfg: cfg}
}

// Two instances over one stream, each with its own cache: writes through
// one never get a wrong answer from the other's stale copy.
func TestWritesThroughAStaleInstance(t *testing.T) {
	a := start(t, nil)
	b := a.another(t)

	for i, step := range []func(t *testing.T, id string){
		func(t *testing.T, id string) { // a parent only a knows of
			var x api.AppendReply
			a.call(t, api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi)}, &x)
			var y api.AppendReply
			b.call(t, api.OpAppend, api.AppendRequest{Session: id, Parent: &x.Leaf, Entries: entries(userHi)}, &y)
			if y.Entries[0].ParentID != x.Leaf {
				t.Fatalf("parent %s, want %s", y.Entries[0].ParentID, x.Leaf)
			}
		},
		func(t *testing.T, id string) { // a client's retry lands on the other instance
			req := api.AppendRequest{Session: id, Entries: entries(`{"type":"message","id":"retry1","message":{"role":"user","content":"once"}}`)}
			a.call(t, api.OpAppend, req, nil)
			b.call(t, api.OpAppend, req, nil)
			var tr api.TreeReply
			a.call(t, api.OpTree, api.SessionRequest{Session: id}, &tr)
			n := 0
			for _, nd := range tr.Nodes {
				if nd.ID == "retry1" {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("retry1 stored %d times", n)
			}
		},
		func(t *testing.T, id string) { // deleted through a
			a.call(t, api.OpDelete, api.SessionRequest{Session: id}, nil)
			if err := b.callErr(api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi)}); !errors.Is(err, session.ErrSessionNotFound) {
				t.Fatalf("append to a deleted session: %v", err)
			}
		},
		func(t *testing.T, id string) { // deleted and created again through a
			a.call(t, api.OpDelete, api.SessionRequest{Session: id}, nil)
			a.call(t, api.OpCreate, api.CreateRequest{ID: id}, nil)
			var y api.AppendReply
			b.call(t, api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi)}, &y)
			var o api.SessionReply
			a.call(t, api.OpOpen, api.SessionRequest{Session: id}, &o)
			if o.Session.Entries != 1 || o.Session.Leaf != y.Leaf {
				t.Fatalf("new session holds %d entries, leaf %s; want 1, %s", o.Session.Entries, o.Session.Leaf, y.Leaf)
			}
		},
		func(t *testing.T, id string) { // label and move to what only a has seen
			var x api.AppendReply
			a.call(t, api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi, userHi)}, &x)
			b.call(t, api.OpLabel, api.LabelRequest{Session: id, Target: x.Leaf, Label: "fresh"}, nil)
			b.call(t, api.OpMove, api.MoveRequest{Session: id, Target: x.Entries[0].ID}, nil)
		},
		func(t *testing.T, id string) { // the sequence a client saw on a
			var x api.AppendReply
			a.call(t, api.OpAppend, api.AppendRequest{Session: id, Entries: entries(userHi)}, &x)
			b.call(t, api.OpAppend, api.AppendRequest{Session: id, IfSequence: x.Sequence, Entries: entries(userHi)}, nil)
			err := b.callErr(api.OpAppend, api.AppendRequest{Session: id, IfSequence: x.Sequence, Entries: entries(userHi)})
			if !isCode(err, api.CodeConflict) {
				t.Fatalf("stale ifSequence: %v", err)
			}
		},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			id := fmt.Sprintf("stale%d", i)
			a.call(t, api.OpCreate, api.CreateRequest{ID: id}, nil)
			// b opens (and caches) the session before a changes it.
			b.call(t, api.OpOpen, api.SessionRequest{Session: id}, nil)
			step(t, id)
		})
	}
}
