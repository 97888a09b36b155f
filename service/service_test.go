package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func entries(js ...string) []jsontext.Value {
	out := make([]jsontext.Value, len(js))
	for i, j := range js {
		out[i] = jsontext.Value(j)
	}
	return out
}

const userHi = `{"type":"message","message":{"role":"user","content":"hi"}}`

func assistant(text string) string {
	return `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}},"stopReason":"stop"}}`
}

// Every operation, in the order an agent uses them, checked against what
// it must have done.
func TestLifecycle(t *testing.T) { sessiontest.EachLayout(t, testLifecycle) }

func testLifecycle(t *testing.T, partitions int) {
	f := startOn(t, partitions, nil)
	var created api.SessionReply
	f.call(t, api.OpCreate, api.CreateRequest{ID: "life", Cwd: "/w", Name: "first", Metadata: jsontext.Value(`{"agent":"x"}`)}, &created)
	if created.Session.ID != "life" || created.Session.Name != "first" || created.Sequence == 0 {
		t.Fatalf("create = %+v", created)
	}
	if err := f.callErr(api.OpCreate, api.CreateRequest{ID: "life"}); !isCode(err, api.CodeExists) {
		t.Fatalf("second create: %v", err)
	}

	var a1 api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "life", Entries: entries(userHi, assistant("hello"))}, &a1)
	if len(a1.Entries) != 2 || a1.Entries[1].ParentID != a1.Entries[0].ID || a1.Leaf != a1.Entries[1].ID || a1.Sequence <= created.Sequence {
		t.Fatalf("append = %+v", a1)
	}
	u1 := a1.Entries[0].ID

	// A stale precondition is refused with where the session is now.
	err := f.callErr(api.OpAppend, api.AppendRequest{Session: "life", Entries: entries(userHi), IfSequence: created.Sequence})
	var pe *api.Error
	if !errors.As(err, &pe) || pe.Code != api.CodeConflict || pe.Leaf != a1.Leaf || pe.Sequence != a1.Sequence || !errors.Is(err, session.ErrConflict) {
		t.Fatalf("stale ifSequence: %v (%+v)", err, pe)
	}
	// The current one is accepted.
	var a2 api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "life", Entries: entries(`{"type":"message","id":"u2","message":{"role":"user","content":"again"}}`), IfSequence: a1.Sequence}, &a2)
	// A retry of the same entry (same id) is stored once.
	var again api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "life", Parent: &a1.Leaf, Entries: entries(`{"type":"message","id":"u2","message":{"role":"user","content":"again"}}`)}, &again)

	var mv api.AppendReply
	f.call(t, api.OpMove, api.MoveRequest{Session: "life", Target: u1, Summary: "tried again", Details: jsontext.Value(`{"n":1}`)}, &mv)
	if mv.Entries[0].ParentID != u1 || mv.Leaf != mv.Entries[0].ID {
		t.Fatalf("move = %+v", mv)
	}
	f.call(t, api.OpLabel, api.LabelRequest{Session: "life", Target: u1, Label: "start"}, nil)
	f.call(t, api.OpName, api.NameRequest{Session: "life", Name: "renamed"}, nil)
	f.call(t, api.OpAppend, api.AppendRequest{Session: "life", Entries: entries(
		`{"type":"model_change","provider":"anthropic","modelId":"claude"}`,
		`{"type":"thinking_level_change","thinkingLevel":"high"}`)}, nil)

	var cx api.ContextReply
	f.call(t, api.OpContext, api.ContextRequest{Session: "life"}, &cx)
	var msgs []map[string]any
	if err := json.Unmarshal(cx.Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	// u1, then the branch summary of the abandoned branch.
	if len(msgs) != 2 || msgs[0]["role"] != "user" || msgs[1]["role"] != "branchSummary" || cx.ThinkingLevel != "high" || cx.Model == nil || cx.Model.ModelID != "claude" {
		t.Fatalf("context = %+v, messages %v", cx, msgs)
	}
	var cxAt api.ContextReply
	f.call(t, api.OpContext, api.ContextRequest{Session: "life", At: "u2"}, &cxAt)
	if err := json.Unmarshal(cxAt.Messages, &msgs); err != nil || len(msgs) != 3 {
		t.Fatalf("context at u2: %d messages, %v", len(msgs), err)
	}

	var tr api.TreeReply
	f.call(t, api.OpTree, api.SessionRequest{Session: "life"}, &tr)
	var open api.SessionReply
	f.call(t, api.OpOpen, api.SessionRequest{Session: "life"}, &open)
	if open.Session.Name != "renamed" || len(open.Labels) != 1 || open.Labels[0].ID != u1 || open.Session.Entries != len(tr.Nodes) || tr.Leaf != open.Session.Leaf {
		t.Fatalf("open = %+v, tree %d nodes leaf %s", open, len(tr.Nodes), tr.Leaf)
	}
	ids := map[string]int{}
	for _, n := range tr.Nodes {
		ids[n.ID]++
	}
	if ids["u2"] != 1 {
		t.Fatalf("u2 stored %d times", ids["u2"])
	}

	// Entries page through everything, in order, as pi JSON.
	var got []string
	for off := 0; ; {
		var page api.EntriesReply
		f.call(t, api.OpEntries, api.EntriesRequest{Session: "life", Offset: off, Limit: 3}, &page)
		for _, e := range page.Entries {
			var m struct{ ID string }
			if err := json.Unmarshal(e, &m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m.ID)
		}
		if page.Next == 0 {
			break
		}
		off = page.Next
	}
	want := make([]string, len(tr.Nodes))
	for i, n := range tr.Nodes {
		want[i] = n.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}

	var st api.StatsReply
	f.call(t, api.OpStats, api.SessionRequest{Session: "life"}, &st)
	if st.Messages != 3 || st.ByRole["assistant"] != 1 || st.Usage.TotalTokens != 15 || st.Usage.Cost != 0.3 || st.BranchSummaries != 1 {
		t.Fatalf("stats = %+v", st)
	}

	var fk api.SessionReply
	f.call(t, api.OpFork, api.ForkRequest{Session: "life", ID: "child", At: "u2"}, &fk)
	if fk.Session.ID != "child" || fk.Copied != 4 || fk.Session.ParentSession == "" {
		t.Fatalf("fork = %+v", fk)
	}
	var ls api.ListReply
	f.call(t, api.OpList, api.ListRequest{Limit: 1}, &ls)
	if len(ls.Sessions) != 1 || ls.Next == "" {
		t.Fatalf("list page 1 = %+v", ls)
	}
	var ls2 api.ListReply
	f.call(t, api.OpList, api.ListRequest{Limit: 1, Cursor: ls.Next}, &ls2)
	if len(ls2.Sessions) != 1 || ls2.Sessions[0].ID == ls.Sessions[0].ID {
		t.Fatalf("list page 2 = %+v", ls2)
	}

	var del api.SessionReply
	f.call(t, api.OpDelete, api.SessionRequest{Session: "child"}, &del)
	if del.Deleted == nil || del.Deleted.Messages != fk.Copied+1 {
		t.Fatalf("delete says %+v, want the header and %d entries gone", del.Deleted, fk.Copied)
	}
	for _, op := range []string{api.OpOpen, api.OpContext, api.OpTree, api.OpStats} {
		if err := f.callErr(op, api.SessionRequest{Session: "child"}); !isCode(err, api.CodeNotFound) || !errors.Is(err, session.ErrSessionNotFound) {
			t.Fatalf("%s after delete: %v", op, err)
		}
	}
	if err := f.callErr(api.OpAppend, api.AppendRequest{Session: "child", Entries: entries(userHi)}); !isCode(err, api.CodeNotFound) {
		t.Fatalf("append after delete: %v", err)
	}
}

func isCode(err error, c api.Code) bool {
	var pe *api.Error
	return errors.As(err, &pe) && pe.Code == c
}

// A second instance (another node's) serves what the first one wrote at
// once: reads check the stream before answering.
func TestReadsSeeWritesThroughAnotherInstance(t *testing.T) {
	sessiontest.EachLayout(t, testReadsSeeWritesThroughAnotherInstance)
}

func testReadsSeeWritesThroughAnotherInstance(t *testing.T, partitions int) {
	f := startOn(t, partitions, nil)
	other, err := service.Start(context.Background(), nc, f.b, f.cfg) // same queue group
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	f.call(t, api.OpCreate, api.CreateRequest{ID: "rw"}, nil)
	for i := range 30 {
		var a api.AppendReply
		f.call(t, api.OpAppend, api.AppendRequest{Session: "rw", Entries: entries(userHi)}, &a)
		var o api.SessionReply
		f.call(t, api.OpOpen, api.SessionRequest{Session: "rw"}, &o)
		if o.Session.Leaf != a.Leaf || o.Sequence != a.Sequence {
			t.Fatalf("round %d: open saw leaf %s seq %d, append made %s seq %d", i, o.Session.Leaf, o.Sequence, a.Leaf, a.Sequence)
		}
	}
	served := func(s *service.Service) int {
		n := 0
		for _, e := range s.Stats().Endpoints {
			n += e.NumRequests
		}
		return n
	}
	if served(f.svc) == 0 || served(other) == 0 {
		t.Fatalf("requests served %d and %d: both instances should take some", served(f.svc), served(other))
	}
}

// Concurrent appends chained onto the leaf through the service all land,
// once, on one chain.
func TestConcurrentAppendsFollowTheLeaf(t *testing.T) {
	sessiontest.EachLayout(t, testConcurrentAppendsFollowTheLeaf)
}

func testConcurrentAppendsFollowTheLeaf(t *testing.T, partitions int) {
	f := startOn(t, partitions, nil)
	f.call(t, api.OpCreate, api.CreateRequest{ID: "race"}, nil)
	const writers, each = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for range writers {
		wg.Go(func() {
			for range each {
				if err := f.callErr(api.OpAppend, api.AppendRequest{Session: "race", Entries: entries(userHi)}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var tr api.TreeReply
	f.call(t, api.OpTree, api.SessionRequest{Session: "race"}, &tr)
	if len(tr.Nodes) != writers*each {
		t.Fatalf("%d entries, want %d", len(tr.Nodes), writers*each)
	}
	for i, n := range tr.Nodes[1:] {
		if n.ParentID != tr.Nodes[i].ID {
			t.Fatalf("entry %d's parent is %s, not the entry before it: the chain forked", i+1, n.ParentID)
		}
	}
}

func TestWait(t *testing.T) { sessiontest.EachLayout(t, testWait) }

func testWait(t *testing.T, partitions int) {
	f := startOn(t, partitions, nil)
	var c api.SessionReply
	f.call(t, api.OpCreate, api.CreateRequest{ID: "w"}, &c)
	done := make(chan api.WaitReply, 1)
	errc := make(chan error, 1)
	go func() {
		var r api.WaitReply
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.c.Call(ctx, api.OpWait, api.WaitRequest{Session: "w", Sequence: c.Sequence + 1, TimeoutMs: 20000}, &r); err != nil {
			errc <- err
			return
		}
		done <- r
	}()
	var a api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "w", Entries: entries(userHi)}, &a)
	select {
	case r := <-done:
		if r.Leaf != a.Leaf || r.Sequence < c.Sequence+1 {
			t.Fatalf("wait = %+v, append %+v", r, a)
		}
	case err := <-errc:
		t.Fatal(err)
	}
	// A sequence nobody writes times out with its own code.
	err := f.callErr(api.OpWait, api.WaitRequest{Session: "w", Sequence: a.Sequence + 1000, TimeoutMs: 100})
	if !isCode(err, api.CodeTimeout) {
		t.Fatalf("wait for the future: %v", err)
	}
}

// The service is discoverable with micro's standard requests.
func TestDiscovery(t *testing.T) {
	f := start(t, func(c *service.Config) { c.Tenant = "acme" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, "$SRV.INFO.sessionlog."+f.svc.Info().ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, e := range info.Endpoints {
		subjects = append(subjects, e.Subject)
	}
	for _, op := range api.Ops {
		if !slices.Contains(subjects, f.cfg.Subject+"."+op) {
			t.Fatalf("$SRV.INFO endpoints %v lack %s", subjects, op)
		}
	}
	if info.Metadata["tenant"] != "acme" || info.Version != "1.0.0" {
		t.Fatalf("info = %+v", info)
	}
	if _, err := nc.RequestWithContext(ctx, "$SRV.PING.sessionlog", nil); err != nil {
		t.Fatal(err)
	}
}

// Close does not wait out a long wait: the waiter is told the service is
// stopping.
func TestCloseEndsWaits(t *testing.T) {
	f := start(t, nil)
	f.call(t, api.OpCreate, api.CreateRequest{ID: "cw"}, nil)
	errc := make(chan error, 1)
	go func() {
		errc <- f.callErr(api.OpWait, api.WaitRequest{Session: "cw", Sequence: 1 << 40, TimeoutMs: 25000})
	}()
	// The wait is in flight once micro has counted the request.
	sessiontest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		for _, e := range f.svc.Stats().Endpoints {
			if e.Name == api.OpWait && e.NumRequests == 1 {
				return nil
			}
		}
		return errors.New("wait not received yet")
	})
	closed := make(chan error, 1)
	go func() { closed <- f.svc.Close(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the wait")
	}
	if err := <-errc; !isCode(err, api.CodeUnavailable) {
		t.Fatalf("the waiter got %v, want unavailable", err)
	}
}
