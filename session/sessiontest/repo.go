package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// RepoBackend describes a repository implementation to the suite.
type RepoBackend struct {
	Name string
	// New returns an empty repository.
	New func(t *testing.T) session.Repo
}

// RunRepo runs the repository conformance tests against b.
func RunRepo(t *testing.T, b RepoBackend) {
	t.Helper()
	t.Run("create-open-delete", func(t *testing.T) { repoLifecycle(t, b.New(t)) })
	t.Run("list", func(t *testing.T) { repoList(t, b.New(t)) })
	t.Run("fork", func(t *testing.T) { repoFork(t, b.New(t)) })
	t.Run("list-filter", func(t *testing.T) { RepoListFilter(t, b.New(t), 2) })
}

// RepoListFilter lists sessions of varied names, working directories,
// labels and metadata through filters, limit sessions a page, and checks
// each listing holds exactly the sessions that match, each once, most
// recently updated first, whatever the pages hold.
func RepoListFilter(t *testing.T, r session.Repo, limit int) {
	ctx := context.Background()
	type spec struct {
		id, cwd, name, meta string
		labels              []string
	}
	specs := []spec{
		{"f0", "/work/app", "Fix the parser", `{"team":"core","n":3}`, []string{"bug"}},
		{"f1", "/work/app/sub", "parser speed", `{"team":"web"}`, []string{"bug", "perf"}},
		{"f2", "/work/application", "", `{"team":"core"}`, nil},
		{"f3", "/home/x", "notes", ``, []string{"perf"}},
		{"f4", "/work/app", "PARSER docs", `{"team":"core","n":"3"}`, nil},
		{"f5", "/tmp", "", `{"other":{"team":"core"}}`, []string{"bug"}},
	}
	for _, sp := range specs {
		h := headerAt(sp.id, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
		h.Cwd = sp.cwd
		if sp.meta != "" {
			h.Metadata = session.Raw(sp.meta)
		}
		st, err := r.Create(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := session.New(st, TestConfig())
		if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("hi")}); err != nil {
			t.Fatal(err)
		}
		if sp.name != "" {
			if _, err := s.SetName(ctx, sp.name); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range sp.labels { // an entry has one label: one each
			e, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(l)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.SetLabel(ctx, e.ID, l); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list := func(f *session.Filter) []session.Listing {
		t.Helper()
		var got []session.Listing
		cursor := ""
		for range 100 {
			page, err := r.List(ctx, session.ListOptions{Limit: limit, Cursor: cursor, Filter: f})
			if err != nil {
				t.Fatalf("list %+v: %v", f, err)
			}
			if len(page.Sessions) > limit {
				t.Fatalf("page of %d sessions, limit %d", len(page.Sessions), limit)
			}
			got = append(got, page.Sessions...)
			if page.Next == "" {
				return got
			}
			cursor = page.Next
		}
		t.Fatalf("list %+v: no last page after 100", f)
		return nil
	}
	ids := func(infos []session.Listing) []string {
		var out []string
		for i, in := range infos {
			out = append(out, in.ID)
			if i > 0 && listedAfter(infos[i-1], in) {
				t.Fatalf("listing not most recently updated first: %v then %v", infos[i-1], in)
			}
		}
		slices.Sort(out)
		return out
	}
	all := list(nil)
	if got := ids(all); !slices.Equal(got, []string{"f0", "f1", "f2", "f3", "f4", "f5"}) {
		t.Fatalf("unfiltered: %v", got)
	}
	for _, in := range all {
		if in.ID == "f1" && (!slices.Equal(in.Labels, []string{"bug", "perf"}) || string(in.Metadata) != `{"team":"web"}`) {
			t.Fatalf("f1 listed with labels %v and metadata %s", in.Labels, in.Metadata)
		}
	}
	// The middle of the listing by time: Since keeps it and those after.
	byTime := slices.Clone(all)
	slices.SortFunc(byTime, func(a, b session.Listing) int { return strings.Compare(a.Updated, b.Updated) })
	mid, err := session.ParseUpdated(byTime[3].Updated)
	if err != nil {
		t.Fatal(err)
	}
	var since, until []string
	for _, in := range byTime {
		at, _ := session.ParseUpdated(in.Updated)
		if at.Before(mid) {
			until = append(until, in.ID)
		} else {
			since = append(since, in.ID)
		}
	}
	slices.Sort(since)
	slices.Sort(until)
	tests := []struct {
		name string
		f    session.Filter
		want []string
	}{
		{"name, any case", session.Filter{Name: "parser"}, []string{"f0", "f1", "f4"}},
		{"cwd and below, not siblings", session.Filter{Cwd: "/work/app"}, []string{"f0", "f1", "f4"}},
		{"cwd with a slash", session.Filter{Cwd: "/work/app/"}, []string{"f0", "f1", "f4"}},
		{"one label", session.Filter{Labels: []string{"bug"}}, []string{"f0", "f1", "f5"}},
		{"two labels", session.Filter{Labels: []string{"bug", "perf"}}, []string{"f1"}},
		{"metadata string", session.Filter{Meta: map[string]string{"team": "core"}}, []string{"f0", "f2", "f4"}},
		{"metadata number", session.Filter{Meta: map[string]string{"n": "3"}}, []string{"f0", "f4"}},
		{"metadata and name", session.Filter{Meta: map[string]string{"team": "core"}, Name: "docs"}, []string{"f4"}},
		{"nothing matches", session.Filter{Labels: []string{"nope"}}, nil},
		{"since", session.Filter{Since: mid}, since},
		{"until", session.Filter{Until: mid}, until},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(list(&tt.f)); !slices.Equal(got, tt.want) {
				t.Fatalf("listed %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := r.List(ctx, session.ListOptions{Filter: &session.Filter{Since: mid, Until: mid}}); !errors.Is(err, session.ErrInvalidConfig) {
		t.Fatalf("since not before until: %v, want ErrInvalidConfig", err)
	}
}

// listedAfter reports whether a is listed after b (a listing is most
// recently updated first, ties by id).
func listedAfter(a, b session.Listing) bool {
	at, _ := session.ParseUpdated(a.Updated)
	bt, _ := session.ParseUpdated(b.Updated)
	if !at.Equal(bt) {
		return at.Before(bt)
	}
	return a.ID > b.ID
}

func headerAt(id string, ts time.Time) session.Header {
	return session.Header{Version: session.CurrentVersion, ID: id, Timestamp: session.FormatTime(ts), Cwd: "/work"}
}

func repoLifecycle(t *testing.T, r session.Repo) {
	ctx := context.Background()
	st, err := r.Create(ctx, TestHeader("life"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := session.New(st, TestConfig())
	u, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("kept")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		do      func() error
		wantErr error
	}{
		{"create an existing id", func() error { _, err := r.Create(ctx, TestHeader("life")); return err }, session.ErrSessionExists},
		{"create a dotted id", func() error { _, err := r.Create(ctx, TestHeader("a.b")); return err }, session.ErrInvalidSessionID},
		{"create a wildcard id", func() error { _, err := r.Create(ctx, TestHeader(">")); return err }, session.ErrInvalidSessionID},
		{"open a missing session", func() error { _, err := r.Open(ctx, "missing"); return err }, session.ErrSessionNotFound},
		{"open a bad id", func() error { _, err := r.Open(ctx, "a b"); return err }, session.ErrInvalidSessionID},
		{"delete a missing session", func() error { return r.Delete(ctx, "missing") }, session.ErrSessionNotFound},
		{"list with a bad page size", func() error { _, err := r.List(ctx, session.ListOptions{Limit: -1}); return err }, session.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	again, err := r.Open(ctx, "life")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Get(ctx, u.ID); err != nil || got.Message.Text() != "kept" {
		t.Fatalf("reopened session lost its entry: %v", err)
	}
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "life"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ctx, "life"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("open after delete: %v", err)
	}
}

func repoList(t *testing.T, r session.Repo) {
	ctx := context.Background()
	base := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("l%d", i)
		ids = append(ids, id)
		st, err := r.Create(ctx, headerAt(id, base.Add(time.Duration(i)*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
	}
	// Written last, with the latest entry time: listed first.
	st, err := r.Open(ctx, "l0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := TestConfig()
	cfg.Clock = session.ClockFunc(func() time.Time { return time.Now().Add(24 * time.Hour) })
	s, _ := session.New(st, cfg)
	if _, err := s.SetName(ctx, "named"); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)

	var got []session.Listing
	cursor := ""
	for range 10 {
		page, err := r.List(ctx, session.ListOptions{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) > 2 {
			t.Fatalf("page of %d sessions, limit 2", len(page.Sessions))
		}
		got = append(got, page.Sessions...)
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	var gotIDs []string
	for _, in := range got {
		gotIDs = append(gotIDs, in.ID)
	}
	sorted := slices.Clone(gotIDs)
	slices.Sort(sorted)
	if !slices.Equal(sorted, ids) {
		t.Fatalf("pages listed %v, want each of %v once", gotIDs, ids)
	}
	if got[0].ID != "l0" || got[0].Name != "named" || got[0].Entries != 1 {
		t.Fatalf("first listed = %+v, want l0 (just written, named, 1 entry)", got[0])
	}
	for i := 1; i < len(got); i++ {
		if got[i].Updated > got[i-1].Updated {
			t.Fatalf("listing not most recently updated first: %+v", got)
		}
	}
}

func repoFork(t *testing.T, r session.Repo) {
	ctx := context.Background()
	src, err := r.Create(ctx, TestHeader("origin"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := session.New(src, TestConfig())
	msg := func(role, text string) *session.Entry {
		e, err := s.AppendMessage(ctx, Msg(role, text))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	u1 := msg(session.RoleUser, "one")
	a1 := msg(session.RoleAssistant, "A")
	u2 := msg(session.RoleUser, "two")
	msg(session.RoleAssistant, "B")
	src.Close(ctx)

	dst, sel, err := r.Fork(ctx, "origin", session.Before(u2.ID), TestHeader("copy"))
	if err != nil {
		t.Fatal(err)
	}
	if sel.Before == nil || sel.Before.ID != u2.ID {
		t.Fatalf("selection stopped before %v", sel.Before)
	}
	dst.Close(ctx)
	copied, err := r.Open(ctx, "copy")
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close(ctx)
	h, _ := copied.Header(ctx)
	es, _ := copied.Entries(ctx)
	if h.ParentSession == "" || len(es) != 2 || es[0].ID != u1.ID || es[1].ID != a1.ID {
		t.Fatalf("fork: parent %q, %d entries", h.ParentSession, len(es))
	}
	// ParentSession has one meaning: the repository opens the parent by it.
	parent, err := r.Open(ctx, h.ParentSession)
	if err != nil {
		t.Fatalf("open the fork's parent %q: %v", h.ParentSession, err)
	}
	if ph, _ := parent.Header(ctx); ph.ID != "origin" {
		t.Fatalf("the fork's parent %q opened session %q", h.ParentSession, ph.ID)
	}
	parent.Close(ctx)
	if _, _, err := r.Fork(ctx, "origin", session.Before(a1.ID), TestHeader("bad")); !errors.Is(err, session.ErrInvalidTarget) {
		t.Fatalf("fork before an assistant message: %v", err)
	}
	if _, err := r.Open(ctx, "bad"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("a refused fork left a session: %v", err)
	}
	if _, _, err := r.Fork(ctx, "nowhere", session.FromLeaf(), TestHeader("bad2")); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("fork of a missing session: %v", err)
	}
}
