package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

func header(id string, ts time.Time) session.Header {
	return session.Header{Version: 3, ID: id, Timestamp: session.FormatTime(ts), Cwd: "/w"}
}

func TestRepoLifecycle(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		s, err := b.Create(ctx, header(fmt.Sprintf("s%d", i), base.Add(time.Duration(i)*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			e := &session.Entry{Type: session.TypeCustom, ID: "e0001", Timestamp: session.FormatTime(base.Add(4 * time.Minute)), Body: &session.Custom{CustomType: "x"}}
			if err := s.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		s.Close(ctx)
	}
	if _, err := b.Create(ctx, header("s3", base)); !errors.Is(err, session.ErrSessionExists) {
		t.Fatalf("create over s3: %v", err)
	}
	// Writing to s1 makes it the most recently updated.
	s1, err := b.Open(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	clock := session.ClockFunc(func() time.Time { return base.Add(time.Hour) })
	sess, _ := session.New(s1, session.Config{Clock: clock, IDs: &sessiontest.SequentialIDs{}})
	if _, err := sess.SetName(ctx, "busy one"); err != nil {
		t.Fatal(err)
	}
	s1.Close(ctx) // flushes the index

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := b.List(ctx, session.ListOptions{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page.Sessions {
			got = append(got, in.ID)
			if in.ID == "s1" && (in.Name != "busy one" || in.Entries != 1) {
				t.Errorf("index of s1 = %+v", in)
			}
		}
		if page.Next == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		cursor = page.Next
	}
	if want := []string{"s1", "s6", "s5", "s4", "s3", "s2", "s0"}; !slices.Equal(got, want) {
		t.Fatalf("listing = %v, want %v", got, want)
	}
	if _, err := b.List(ctx, session.ListOptions{Limit: 5000}); !errors.Is(err, session.ErrInvalidConfig) {
		t.Fatalf("oversized page: %v", err)
	}

	if err := b.Delete(ctx, "s4"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, "s4"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("open deleted: %v", err)
	}
	if err := b.Delete(ctx, "s4"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	page, _ := b.List(ctx, session.ListOptions{})
	for _, in := range page.Sessions {
		if in.ID == "s4" {
			t.Fatal("deleted session still listed")
		}
	}
	// The id can be used again after a delete, with the same entry ids:
	// the old session's message ids must not dedupe the new one's.
	s4, err := b.Create(ctx, header("s4", base))
	if err != nil {
		t.Fatalf("re-create after delete: %v", err)
	}
	e := &session.Entry{Type: session.TypeCustom, ID: "e0001", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "x"}}
	if err := s4.Append(ctx, e); err != nil {
		t.Fatalf("append to the re-created session: %v", err)
	}
	s4.Close(ctx)
	again, err := b.Open(ctx, "s4")
	if err != nil {
		t.Fatal(err)
	}
	if es, _ := again.Entries(ctx); len(es) != 1 {
		t.Fatalf("re-created session has %d entries, want 1", len(es))
	}
	again.Close(ctx)
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	src, err := b.Create(ctx, sessiontest.TestHeader("src"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := session.New(src, sessiontest.TestConfig())
	u1, _ := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("one")})
	s.AppendMessage(ctx, sessiontest.Msg(session.RoleAssistant, "A"))
	u2, _ := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("two")})
	s.AppendMessage(ctx, sessiontest.Msg(session.RoleAssistant, "B"))
	src.Close(ctx)

	dst, sel, err := b.Fork(ctx, "src", session.Before(u2.ID), sessiontest.TestHeader("dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close(ctx)
	if sel.Before.ID != u2.ID || len(sel.Entries) != 2 {
		t.Fatalf("selection = %+v", sel)
	}
	reopened, err := b.Open(ctx, "dst")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := reopened.Header(ctx)
	es, _ := reopened.Entries(ctx)
	if h.ParentSession != "src" || len(es) != 2 || es[0].ID != u1.ID {
		t.Fatalf("fork header %+v, %d entries", h, len(es))
	}
	if _, _, err := b.Fork(ctx, "src", session.Before("nope"), sessiontest.TestHeader("dst2")); !errors.Is(err, session.ErrInvalidTarget) {
		t.Fatalf("fork before a missing entry: %v", err)
	}
	if _, _, err := b.Fork(ctx, "ghost", session.FromLeaf(), sessiontest.TestHeader("dst3")); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("fork of a missing session: %v", err)
	}
}

func TestBadSessionIDs(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	tests := []struct {
		name string
		id   string
	}{
		{"dot", "a.b"}, {"star", "*"}, {"gt", ">"}, {"space", "a b"}, {"empty", ""},
		{"too long", strings.Repeat("x", session.MaxSessionIDLen+1)}, {"slash", "a/b"}, {"newline", "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := b.Create(ctx, sessiontest.TestHeader(tt.id)); !errors.Is(err, session.ErrInvalidSessionID) {
				t.Errorf("Create: %v", err)
			}
			if _, err := b.Open(ctx, tt.id); !errors.Is(err, session.ErrInvalidSessionID) {
				t.Errorf("Open: %v", err)
			}
			if err := b.Delete(ctx, tt.id); !errors.Is(err, session.ErrInvalidSessionID) {
				t.Errorf("Delete: %v", err)
			}
		})
	}
}

func TestEntryTooLargeAndBadTypes(t *testing.T) {
	ctx := context.Background()
	inline := stream.DefaultConfig()
	inline.OffloadThreshold = 0
	b := newBackendWith(t, inline)
	s, err := b.CreateStore(ctx, sessiontest.TestHeader("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	huge := &session.Entry{Type: session.TypeCustom, ID: "huge", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "x", Data: session.Raw(`"` + strings.Repeat("a", int(nc.MaxPayload())) + `"`)}}
	if err := s.Append(ctx, huge); !errors.Is(err, stream.ErrEntryTooLarge) {
		t.Fatalf("oversized entry: %v", err)
	}
	// Stored apart (the default), the same entry fits, and reads back.
	apart, err := newBackend(t).CreateStore(ctx, sessiontest.TestHeader("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer apart.Close(ctx)
	if err := apart.Append(ctx, huge.Clone()); err != nil {
		t.Fatalf("oversized entry stored apart: %v", err)
	}
	if got, err := apart.Get(ctx, "huge"); err != nil || string(got.Custom().Data) != string(huge.Custom().Data) {
		t.Fatalf("oversized entry read back: %v", err)
	}
	odd := &session.Entry{Type: "has.dot", ID: "odd", Timestamp: "2025-01-01T00:00:00.000Z"}
	if err := s.Append(ctx, odd); !errors.Is(err, session.ErrInvalidEntry) {
		t.Fatalf("type with a dot: %v", err)
	}
	if es, _ := s.Entries(ctx); len(es) != 0 {
		t.Fatalf("refused entries were stored: %d", len(es))
	}
}

func TestBatchIsAtomic(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	a, err := b.CreateStore(ctx, sessiontest.TestHeader("batch"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	stale, _ := b.OpenStore(ctx, "batch")
	defer stale.Close(ctx)
	mk := func(id, parent string) *session.Entry {
		return &session.Entry{Type: session.TypeCustom, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "x"}}
	}
	if err := a.AppendBatch(ctx, []*session.Entry{mk("a1", ""), mk("a2", "a1"), mk("a3", "a2")}); err != nil {
		t.Fatal(err)
	}
	// The stale writer's batch fails its sequence check as a whole.
	err = stale.AppendBatch(ctx, []*session.Entry{mk("b1", ""), mk("b2", "b1")})
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("stale batch: %v", err)
	}
	fresh, _ := b.OpenStore(ctx, "batch")
	defer fresh.Close(ctx)
	es, _ := fresh.Entries(ctx)
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []string{"a1", "a2", "a3"}) {
		t.Fatalf("entries = %v", ids)
	}
	if seq, _ := fresh.Sequence(ctx); seq == 0 {
		t.Fatal("no sequence")
	}
}

func TestIncompatibleStreamIsReportedNotChanged(t *testing.T) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FOREIGN", Subjects: []string{"foreign.>"}, MaxAge: time.Hour, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = "FOREIGN", "foreign"
	_, err = stream.New(ctx, nc, cfg)
	if !errors.Is(err, stream.ErrIncompatibleStream) {
		t.Fatalf("New on a foreign stream: %v", err)
	}
	for _, want := range []string{"retention", "expire", "atomic"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	s, _ := js.Stream(ctx, "FOREIGN")
	if got := s.CachedInfo().Config; got.MaxAge != time.Hour || got.Retention != jetstream.WorkQueuePolicy {
		t.Fatal("the foreign stream was changed")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*stream.Config)
		wantErr bool
	}{
		{"default", func(*stream.Config) {}, false},
		{"bad stream name", func(c *stream.Config) { c.Stream = "a.b" }, true},
		{"bad prefix", func(c *stream.Config) { c.Prefix = "a.*" }, true},
		{"zero replicas (chosen from the server)", func(c *stream.Config) { c.Replicas = 0 }, false},
		{"negative replicas", func(c *stream.Config) { c.Replicas = -1 }, true},
		{"no dedupe", func(c *stream.Config) { c.DedupeWindow = 0 }, true},
		{"partitions from the deployment", func(c *stream.Config) { c.Partitions = 0 }, false},
		{"the most partitions", func(c *stream.Config) { c.Partitions = stream.MaxPartitions }, false},
		{"too many partitions", func(c *stream.Config) { c.Partitions = stream.MaxPartitions + 1 }, true},
		{"negative partitions", func(c *stream.Config) { c.Partitions = -1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stream.DefaultConfig()
			tt.mutate(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, stream.ErrInvalidConfig)) {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestRepoConformance(t *testing.T) {
	sessiontest.RunRepo(t, sessiontest.RepoBackend{
		Name: "jetstream",
		New:  func(t *testing.T) session.Repo { return newBackend(t) },
	})
	partitioned := stream.DefaultConfig()
	partitioned.Partitions = 4
	sessiontest.RunRepo(t, sessiontest.RepoBackend{
		Name: "jetstream-4-partitions",
		New:  func(t *testing.T) session.Repo { return newBackendWith(t, partitioned) },
	})
}

// A filtered page reads a bounded number of records: with a budget of one
// record, pages end early (empty ones too) and still, followed to the end,
// list exactly the matching sessions once each, in order, over one
// partition and over four.
func TestFilteredListingWithinABudget(t *testing.T) {
	defer stream.SetMaxScanned(1)()
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprintf("P=%d", parts), func(t *testing.T) {
			cfg := stream.DefaultConfig()
			cfg.Partitions = parts
			sessiontest.RepoListFilter(t, newBackendWith(t, cfg), 1)
		})
	}
}
