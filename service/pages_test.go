package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Context, entries, tree and list larger than one NATS message come in
// pages that together hold everything, in order; an item that fits on no
// page is refused, naming it; nothing is ever dropped silently.
func TestRepliesLargerThanAMessageArePaged(t *testing.T) {
	_, c := clustertest.SmallNode(t, 128<<10)
	b := servicetest.Backend(t, c)
	_, cfg := servicetest.Start(t, c, b, func(cfg *service.Config) {
		cfg.Limits.MaxRequestBytes, cfg.Limits.MaxEntryBytes = 100<<10, 100<<10
		unlimited(cfg)
	})
	cl := api.NewClient(c, cfg.Subject)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	call := func(op string, req, reply any) {
		t.Helper()
		if err := cl.Call(ctx, op, req, reply); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	call(api.OpCreate, api.CreateRequest{ID: "big"}, nil)
	const n = 12 // 12 × 40 KB: almost four times the payload
	for i := range n {
		text := fmt.Sprintf("%02d:%s", i, strings.Repeat("x", 40<<10))
		call(api.OpAppend, api.AppendRequest{Session: "big", Entries: entries(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)}, nil)
	}

	// Context: pages until next is 0, same sequence throughout.
	var got []string
	var sources []string
	offset, pages := 0, 0
	var seq uint64
	for {
		var r api.ContextReply
		call(api.OpContext, api.ContextRequest{Session: "big", Offset: offset}, &r)
		var msgs []struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(r.Messages, &msgs); err != nil {
			t.Fatal(err)
		}
		if r.Total != n || len(r.Sources) != len(msgs) || (seq != 0 && r.Sequence != seq) {
			t.Fatalf("page at %d: total %d, %d sources for %d messages, sequence %d (was %d)", offset, r.Total, len(r.Sources), len(msgs), r.Sequence, seq)
		}
		seq = r.Sequence
		for _, m := range msgs {
			got = append(got, m.Content[:2])
		}
		sources = append(sources, r.Sources...)
		pages++
		if r.Next == 0 {
			break
		}
		if r.Next <= offset {
			t.Fatalf("next %d does not move on from %d", r.Next, offset)
		}
		offset = r.Next
	}
	if pages < 4 || len(got) != n || len(sources) != n {
		t.Fatalf("context in %d pages, %d messages: %v", pages, len(got), got)
	}
	for i, g := range got {
		if g != fmt.Sprintf("%02d", i) {
			t.Fatalf("message %d is %s: pages overlap or skip (%v)", i, g, got)
		}
	}

	// Entries: the page is cut by size and next says where to go on.
	total, next := 0, 0
	for {
		var r api.EntriesReply
		call(api.OpEntries, api.EntriesRequest{Session: "big", Offset: next, Limit: 100}, &r)
		total += len(r.Entries)
		if r.Next == 0 {
			break
		}
		next = r.Next
	}
	if total != n {
		t.Fatalf("entries pages held %d entries, want %d", total, n)
	}

	// Offsets past the end (or near MaxInt) give empty pages, not overflow.
	var far api.EntriesReply
	call(api.OpEntries, api.EntriesRequest{Session: "big", Offset: 1<<63 - 1}, &far)
	if len(far.Entries) != 0 || far.Next != 0 {
		t.Fatalf("offset near MaxInt: %d entries, next %d", len(far.Entries), far.Next)
	}

	// An entry too large for any reply (the library may store up to the
	// payload) is refused by name, never dropped.
	call(api.OpCreate, api.CreateRequest{ID: "huge"}, nil)
	st, err := b.Open(ctx, "huge")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.New(st, sessiontest.TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(strings.Repeat("y", 125<<10))}); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	for _, op := range []struct {
		name string
		req  any
		what string
	}{
		{api.OpEntries, api.EntriesRequest{Session: "huge"}, "entry 0"},
		{api.OpContext, api.ContextRequest{Session: "huge"}, "message 0"},
	} {
		err := cl.Call(ctx, op.name, op.req, nil)
		var pe *api.Error
		if !errors.As(err, &pe) || pe.Code != api.CodeTooLarge || !strings.Contains(pe.Message, op.what) {
			t.Fatalf("%s of a session with an entry larger than a reply: %v", op.name, err)
		}
	}

	// List: sessions with long paths come in pages.
	cwd := "/" + strings.Repeat("d", 4000)
	for i := range 20 {
		call(api.OpCreate, api.CreateRequest{ID: fmt.Sprintf("l%02d", i), Cwd: cwd}, nil)
	}
	seen := map[string]bool{}
	cursor, lpages := "", 0
	for {
		var r api.ListReply
		call(api.OpList, api.ListRequest{Limit: 1000, Cursor: cursor}, &r)
		for _, s := range r.Sessions {
			if seen[s.ID] {
				t.Fatalf("session %s listed twice", s.ID)
			}
			seen[s.ID] = true
		}
		lpages++
		if r.Next == "" {
			break
		}
		cursor = r.Next
	}
	if len(seen) != 22 || lpages < 2 {
		t.Fatalf("listing: %d sessions in %d pages, want 22 in several", len(seen), lpages)
	}
}

// An entries reply written by hand is the one json.Marshal writes.
func TestEncodeEntriesAsMarshal(t *testing.T) {
	for _, r := range []api.EntriesReply{
		{Entries: []jsontext.Value{}, Total: 0, Sequence: 0},
		{Entries: []jsontext.Value{jsontext.Value(`{"type":"message","id":"a"}`), jsontext.Value(`{"id":"bé \"\\u2028"}`)}, Total: 10, Next: 2, Sequence: 77},
		{Entries: []jsontext.Value{jsontext.Value(`{"id":"c"}`)}, Total: 1, Sequence: 1 << 60},
	} {
		want, err := jsonv2.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := service.EncodeEntries(r); string(got) != string(want) {
			t.Errorf("encoded %s\nwant    %s", got, want)
		}
	}
}
