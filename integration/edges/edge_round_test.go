package edges

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// linkedPair is a hub and an edge of tenant acme in this process, each
// with a sessions backend (of the config tweak makes), their streams
// sourcing each other's; link is the edge's link, which the test may cut.
type linkedPair struct {
	hb, eb *stream.Backend
	en     *cluster.Node
	link   *clustertest.Proxy
}

func newLinkedPair(t *testing.T, tweak func(*stream.Config)) *linkedPair {
	t.Helper()
	ctx := context.Background()
	hcfg := cluster.DefaultConfig(t.TempDir())
	hcfg.Domain, hcfg.LeafListen = "hub", "127.0.0.1:0"
	hcfg.Auth = &cluster.AuthConfig{
		Tenants: []cluster.Tenant{{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}}, Edges: []cluster.Edge{{Domain: "laptop", User: "laptop", Password: "laptop-pw"}}}},
	}
	service.Permit(hcfg.Auth, stream.DefaultConfig(), hcfg.Domain)
	hn, err := cluster.Start(ctx, hcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hn.Close(ctx) })
	link, err := clustertest.NewProxy(strings.TrimPrefix(hn.LeafURL(), "nats-leaf://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	ecfg := cluster.DefaultConfig(t.TempDir())
	ecfg.Domain, ecfg.ServerName = "laptop", "sessionlog-laptop"
	ecfg.Hub = &cluster.HubConfig{URLs: []string{"nats-leaf://laptop:laptop-pw@" + link.Addr()}}
	en, err := cluster.Start(ctx, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { en.Close(ctx) })
	hnc, err := hn.ConnectTenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hnc.Close)
	enc, err := en.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enc.Close)
	open := func(nc *nats.Conn, origin string, edge bool) *stream.Backend {
		cfg := stream.DefaultConfig()
		cfg.Origin, cfg.Edge = origin, edge
		tweak(&cfg)
		b, err := stream.New(ctx, nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(ctx) })
		return b
	}
	hb, eb := open(hnc, "hub", false), open(enc, "laptop", true)
	sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if !en.Linked() {
			return fmt.Errorf("not linked")
		}
		return nil
	})
	if _, err := hb.SourceFrom(ctx, "laptop", eb.Config().Streams()); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.SourceFrom(ctx, "hub", hb.Config().Streams()); err != nil {
		t.Fatal(err)
	}
	return &linkedPair{hb: hb, eb: eb, en: en, link: link}
}

// Nothing goes round, however long an edge is away: the hub's sessions
// the edge took in are never sent back to the hub, and what the edge
// wrote comes back to it onto subjects it never sends up. Both sides'
// duplicate windows are a second here, and the edge is away for longer:
// a message that went round would be stored again, not recognised.
func TestNothingGoesRound(t *testing.T) {
	ctx := context.Background()
	const window = time.Second
	p := newLinkedPair(t, func(c *stream.Config) { c.DedupeWindow = window })
	hb, eb, en, link := p.hb, p.eb, p.en, p.link
	seq := 0
	write := func(b *stream.Backend, id string, n int) {
		t.Helper()
		st, err := b.OpenStore(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		if err := st.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		for range n {
			parent, err := st.Leaf(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seq++
			e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%s-%04d", b.Config().Origin, seq), ParentID: parent, Timestamp: nowStamp(),
				Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("x"), Timestamp: time.Now().UnixMilli()}}
			if err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	create := func(b *stream.Backend, id string) {
		t.Helper()
		st, err := b.CreateStore(ctx, session.Header{ID: id, Timestamp: nowStamp(), Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
	}
	// entries is how many entries session id holds at b, each once.
	entries := func(b *stream.Backend, id string) (int, error) {
		l, err := b.LoadTree(ctx, id)
		if err != nil {
			return 0, err
		}
		return l.Tree.Len(), nil
	}
	holds := func(b *stream.Backend, id string, want int) func() error {
		return func() error {
			n, err := entries(b, id)
			if err == nil && n != want {
				err = fmt.Errorf("%s holds %d entries of %d", id, n, want)
			}
			return err
		}
	}
	create(hb, "written-at-hub")
	create(eb, "written-on-laptop")
	write(hb, "written-at-hub", 20)
	write(eb, "written-on-laptop", 20)
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, holds(eb, "written-at-hub", 20))
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, holds(hb, "written-on-laptop", 20))

	// Away for longer than both windows, each side writing.
	link.SetCut(true)
	sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if en.Linked() {
			return fmt.Errorf("still linked")
		}
		return nil
	})
	write(hb, "written-at-hub", 20)
	write(eb, "written-on-laptop", 20)
	time.Sleep(3 * window) // the scenario: away past the windows
	link.SetCut(false)
	sessiontest.CheckFor(t, 60*time.Second, 50*time.Millisecond, holds(eb, "written-at-hub", 40))
	sessiontest.CheckFor(t, 60*time.Second, 50*time.Millisecond, holds(hb, "written-on-laptop", 40))
	// Sourcing restarted both ways (as when a link comes back), past the
	// windows: it resumes where it stood, taking nothing in again.
	time.Sleep(2 * window)
	if _, err := hb.Restart(ctx, "laptop", eb.Config().Streams()); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.Restart(ctx, "hub", hb.Config().Streams()); err != nil {
		t.Fatal(err)
	}
	// One more each way after everything: once it has arrived, whatever
	// was sourced before it has too (a source delivers in order).
	write(hb, "written-at-hub", 1)
	write(eb, "written-on-laptop", 1)
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, holds(eb, "written-at-hub", 41))
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, holds(hb, "written-on-laptop", 41))
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, holds(eb, "written-on-laptop", 41))

	// Each message of each session is stored once at the hub (header and
	// 41 entries) and once on the laptop, but for what the laptop wrote
	// coming back past its window: onto .h, never sent up.
	count := func(b *stream.Backend, filter string) uint64 {
		s, err := b.JetStream().Stream(ctx, b.Config().Streams()[0])
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n
	}
	for _, c := range []struct {
		b      *stream.Backend
		filter string
		want   uint64
	}{
		{hb, "sessions.written-at-hub", 42},
		{hb, "sessions.written-on-laptop", 42},
		{eb, "sessions.written-at-hub.h", 42},
		{eb, "sessions.written-at-hub.o", 0},
		{eb, "sessions.written-on-laptop.o", 42},
	} {
		if got := count(c.b, c.filter); got != c.want {
			t.Errorf("%s: %d messages, want %d", c.filter, got, c.want)
		}
	}
	back := count(eb, "sessions.written-on-laptop.h")
	if back > 21 { // the 20 written away and the last at most
		t.Errorf("%d of the laptop's messages came back to it", back)
	}
	t.Logf("the laptop's own messages stored again on coming back past its window: %d", back)
}

func nowStamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

// A session created on both sides while apart (a LangGraph thread "1",
// an Agents SDK session of an id the application chose) is one session
// once they meet: every entry of both, the earlier header on both sides,
// whether read whole or caught up by a store held open meanwhile. A
// session deleted on one side stays deleted there while the other writes
// on.
func TestCreatedOnBothSidesWhileApart(t *testing.T) {
	ctx := context.Background()
	p := newLinkedPair(t, func(*stream.Config) {})
	// Synced once first, as a machine that has been linked before.
	for _, b := range []*stream.Backend{p.hb, p.eb} {
		st, err := b.CreateStore(ctx, session.Header{ID: "hello-" + b.Config().Origin, Timestamp: nowStamp(), Cwd: "/"})
		if err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
	}
	for _, c := range []struct {
		b  *stream.Backend
		id string
	}{{p.hb, "hello-laptop"}, {p.eb, "hello-hub"}} {
		sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
			_, err := c.b.LoadTree(ctx, c.id)
			return err
		})
	}
	p.link.SetCut(true)
	sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if p.en.Linked() {
			return fmt.Errorf("still linked")
		}
		return nil
	})
	held := map[string]*stream.Store{}
	for _, side := range []struct {
		name string
		b    *stream.Backend
		at   string
	}{{"hub", p.hb, "2026-12-05T10:00:02.000Z"}, {"laptop", p.eb, "2026-12-05T10:00:01.000Z"}} {
		st, err := side.b.CreateStore(ctx, session.Header{ID: "thread-1", Timestamp: side.at, Cwd: "/" + side.name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(ctx) })
		parent := ""
		for i := range 3 {
			id := fmt.Sprintf("%s-%d", side.name, i)
			e := &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: nowStamp(),
				Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: time.Now().UnixMilli()}}
			if err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			parent = id
		}
		held[side.name] = st
	}
	p.link.SetCut(false)
	for name, b := range map[string]*stream.Backend{"hub": p.hb, "laptop": p.eb} {
		sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
			l, err := b.LoadTree(ctx, "thread-1")
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if h := l.Tree.Header(); l.Tree.Len() != 6 || h.Cwd != "/laptop" {
				return fmt.Errorf("%s reads %d entries, header of %s", name, l.Tree.Len(), h.Cwd)
			}
			return nil
		})
		st := held[name]
		if err := st.CatchUp(ctx); err != nil {
			t.Fatalf("%s: the store held open catching up: %v", name, err)
		}
		h, _ := st.Header(ctx)
		stats, _ := st.Stats(ctx)
		leaf, _ := st.Leaf(ctx)
		if h.Cwd != "/laptop" || stats.Entries != 6 {
			t.Fatalf("%s: the store held open has %d entries, header of %s", name, stats.Entries, h.Cwd)
		}
		t.Logf("%s: leaf %s", name, leaf)
	}

	// Deleted at the hub; the laptop writes on: the hub keeps it deleted.
	if _, err := p.hb.DeleteSession(ctx, "thread-1"); err != nil {
		t.Fatal(err)
	}
	leaf, _ := held["laptop"].Leaf(ctx)
	e := &session.Entry{Type: session.TypeMessage, ID: "after-delete", ParentID: leaf, Timestamp: nowStamp(),
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("on"), Timestamp: time.Now().UnixMilli()}}
	if err := held["laptop"].Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		s, err := p.hb.JetStream().Stream(ctx, p.hb.Config().StreamOf("thread-1"))
		if err != nil {
			return err
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(p.hb.SessionSubjects("thread-1")))
		if err != nil || info.State.Msgs == 0 {
			return fmt.Errorf("the laptop's entry has not reached the hub (%v)", err)
		}
		return nil
	})
	if _, err := p.hb.LoadTree(ctx, "thread-1"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("a session deleted at the hub, written on since by the laptop, reads at the hub: %v", err)
	}
}
