package session_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

var ctx = context.Background()

func newSession(t *testing.T, cfg session.Config) *session.Session {
	t.Helper()
	s, err := session.New(sessionkit.NewMemoryStore(sessiontest.TestHeader("t")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func user(text string) session.Message {
	return session.Message{Role: session.RoleUser, Content: session.TextContent(text)}
}

func texts(c session.Context) []string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, m.Role+":"+m.Text())
	}
	return out
}

func TestTransformsAndProjectorsMerge(t *testing.T) {
	redact := func(e *session.Entry) *session.Entry {
		if e.Message != nil && e.Message.Text() == "secret" {
			c := e.Clone()
			c.Message.Content = session.TextContent("[redacted]")
			return c
		}
		return e
	}
	dropTools := func(e *session.Entry) *session.Entry {
		if e.Message != nil && e.Message.Role == session.RoleToolResult {
			return nil
		}
		return e
	}
	project := func(prefix string) session.Projector {
		return func(e *session.Entry) []session.Message {
			return []session.Message{user(prefix + string(e.Custom().Data))}
		}
	}
	cfg := sessiontest.TestConfig()
	cfg.Context = session.ContextOptions{
		Transforms: []session.EntryTransform{redact},
		Projectors: map[string]session.Projector{"note": project("session:"), "plan": project("plan:")},
	}
	s := newSession(t, cfg)
	e := must[*session.Entry](t)
	e(s.AppendMessage(ctx, user("secret")))
	e(s.AppendMessage(ctx, session.Message{Role: session.RoleToolResult, Body: &session.ToolResultFields{ToolCallID: "c", ToolName: "x"}, Content: session.TextContent("out")}))
	e(s.AppendCustom(ctx, "note", session.Raw(`1`)))
	e(s.AppendCustom(ctx, "plan", session.Raw(`2`)))
	e(s.AppendCustom(ctx, "other", session.Raw(`3`)))

	tests := []struct {
		name string
		opts []session.ContextOption
		want []string
	}{
		{"session level only", nil, []string{"user:[redacted]", "toolResult:out", "user:session:1", "user:plan:2"}},
		{"call transform runs after session transform", []session.ContextOption{session.WithTransforms(dropTools)},
			[]string{"user:[redacted]", "user:session:1", "user:plan:2"}},
		{"call projector overrides session projector", []session.ContextOption{session.WithProjector("note", project("call:"))},
			[]string{"user:[redacted]", "toolResult:out", "user:call:1", "user:plan:2"}},
		{"call projector for a new type", []session.ContextOption{session.WithProjector("other", project("other:"))},
			[]string{"user:[redacted]", "toolResult:out", "user:session:1", "user:plan:2", "user:other:3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := s.BuildContext(ctx, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(c); !slices.Equal(got, tt.want) {
				t.Errorf("context = %q, want %q", got, tt.want)
			}
		})
	}
	// The stored entry was not changed by the transform.
	entries, _ := s.Store().Entries(ctx)
	if entries[0].Message.Text() != "secret" {
		t.Error("a transform changed the stored entry")
	}
}

func TestMoveToRefusesLeafMarkersAndMissingTargets(t *testing.T) {
	s := newSession(t, sessiontest.TestConfig())
	e := must[*session.Entry](t)
	u := e(s.AppendMessage(ctx, user("a")))
	e(s.AppendMessage(ctx, user("b")))
	marker := e(s.MoveTo(ctx, u.ID))
	if marker.Type != session.TypeLeaf || marker.ParentID != u.ID {
		t.Fatalf("move wrote %+v, want a leaf entry naming %s", marker, u.ID)
	}
	tests := []struct {
		name    string
		target  string
		wantErr error
	}{
		{"leaf marker", marker.ID, session.ErrInvalidTarget},
		{"missing", "zzz", session.ErrEntryNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.MoveTo(ctx, tt.target)
			var te *session.TargetError
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &te) || te.ID != tt.target {
				t.Fatalf("MoveTo(%s) = %v, want a TargetError for it that is %v", tt.target, err, tt.wantErr)
			}
		})
	}
	if _, err := s.SetLabel(ctx, marker.ID, "x"); !errors.Is(err, session.ErrInvalidTarget) {
		t.Fatalf("labelling a leaf marker: %v", err)
	}
	if _, err := s.SelectFork(ctx, session.At(marker.ID)); !errors.Is(err, session.ErrInvalidTarget) {
		t.Fatalf("forking at a leaf marker: %v", err)
	}
	// Moving to where the leaf already is writes nothing.
	if got, err := s.MoveTo(ctx, u.ID); err != nil || got != nil {
		t.Fatalf("no-op move = %v, %v", got, err)
	}
}

// pi appends after our leaf marker (its leaf is the last line): the entry
// hangs from the marker, and the tree shows it under the marker's target.
func TestEntriesAfterALeafMarker(t *testing.T) {
	tr := session.NewTree(sessiontest.TestHeader("t"))
	add := func(e *session.Entry) {
		t.Helper()
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	msg := func(id, parent string) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:0" + id[1:] + ".000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id)}}
	}
	add(msg("a1", ""))
	add(msg("a2", "a1"))
	add(&session.Entry{Type: session.TypeLeaf, ID: "l3", ParentID: "a1", Timestamp: "2025-01-01T00:00:03.000Z"})
	if tr.Leaf() != "a1" {
		t.Fatalf("leaf after marker = %q", tr.Leaf())
	}
	add(msg("a4", "l3"))
	v := sessiontest.Must(t, tr.View)
	if len(v.Roots) != 1 || len(v.Roots[0].Children) != 2 || v.Roots[0].Children[1].Entry.ID != "a4" {
		t.Fatalf("a4 should hang from a1 beside a2: %+v", v.Roots[0].Children)
	}
	br, _ := tr.Branch("")
	c := session.BuildContext(br, session.ContextOptions{})
	if got := texts(c); !slices.Equal(got, []string{"user:a1", "user:a4"}) {
		t.Fatalf("context = %q", got)
	}
}

func TestLabelOrderFollowsPi(t *testing.T) {
	tr := session.NewTree(sessiontest.TestHeader("t"))
	apply := func(e *session.Entry) {
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	apply(&session.Entry{Type: session.TypeCustom, ID: "x", Body: &session.Custom{CustomType: "c"}})
	apply(&session.Entry{Type: session.TypeCustom, ID: "y", ParentID: "x", Body: &session.Custom{CustomType: "c"}})
	label := func(id, target, l string) {
		apply(&session.Entry{Type: session.TypeLabel, ID: id, ParentID: "y", Body: &session.Label{TargetID: target, Label: l}})
	}
	label("l1", "x", "one")
	label("l2", "y", "two")
	label("l3", "x", "one again") // re-set keeps its place
	var got []string
	for _, l := range tr.Labels() {
		got = append(got, l.ID+"="+l.Label)
	}
	if !slices.Equal(got, []string{"x=one again", "y=two"}) {
		t.Fatalf("labels = %v", got)
	}
	label("l4", "x", "") // clear, then set again: moves last
	label("l5", "x", "back")
	got = nil
	for _, l := range tr.Labels() {
		got = append(got, l.ID+"="+l.Label)
	}
	if !slices.Equal(got, []string{"y=two", "x=back"}) {
		t.Fatalf("labels = %v", got)
	}
}

func TestIDCollisionsAreRetried(t *testing.T) {
	ids := []string{"same", "same", "same", "other"}
	n := 0
	cfg := sessiontest.TestConfig()
	cfg.IDs = session.IDFunc(func() string { id := ids[n]; n++; return id })
	s := newSession(t, cfg)
	e := must[*session.Entry](t)
	a := e(s.AppendMessage(ctx, user("1")))
	b := e(s.AppendMessage(ctx, user("2")))
	if a.ID != "same" || b.ID != "other" {
		t.Fatalf("ids %q %q", a.ID, b.ID)
	}
	cfg.IDs = session.IDFunc(func() string { return "same" })
	s2, _ := session.New(s.Store(), cfg)
	if _, err := s2.AppendMessage(ctx, user("3")); err == nil {
		t.Fatal("an id source that only repeats itself was not refused")
	}
	cfg.IDs = session.IDFunc(func() string { return "has space" })
	s3, _ := session.New(s.Store(), cfg)
	if _, err := s3.AppendMessage(ctx, user("3")); !errors.Is(err, session.ErrInvalidEntry) {
		t.Fatalf("bad id from the source: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     session.Config
		wantErr bool
	}{
		{"complete", sessiontest.TestConfig(), false},
		{"no clock", session.Config{IDs: &sessiontest.SequentialIDs{}}, true},
		{"no ids", session.Config{Clock: sessiontest.NewSteppingClock()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.New(sessionkit.NewMemoryStore(sessiontest.TestHeader("t")), tt.cfg)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, session.ErrInvalidConfig)) {
				t.Fatalf("New error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
	if _, err := session.New(nil, sessiontest.TestConfig()); !errors.Is(err, session.ErrInvalidConfig) {
		t.Fatalf("nil store: %v", err)
	}
}

func TestAppendBatchIsAllOrNothing(t *testing.T) {
	st := sessionkit.NewMemoryStore(sessiontest.TestHeader("t"))
	ok := &session.Entry{Type: session.TypeCustom, ID: "a", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "c"}}
	chained := &session.Entry{Type: session.TypeCustom, ID: "b", ParentID: "a", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "c"}}
	bad := &session.Entry{Type: session.TypeCustom, ID: "c", ParentID: "ghost", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "c"}}
	if err := st.AppendBatch(ctx, []*session.Entry{ok, chained, bad}); !errors.Is(err, session.ErrParentNotFound) {
		t.Fatalf("batch with a bad entry: %v", err)
	}
	if es, _ := st.Entries(ctx); len(es) != 0 {
		t.Fatalf("a refused batch stored %d entries", len(es))
	}
	if err := st.AppendBatch(ctx, []*session.Entry{ok, chained}); err != nil {
		t.Fatal(err)
	}
	dup := &session.Entry{Type: session.TypeCustom, ID: "d", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "c"}}
	if err := st.AppendBatch(ctx, []*session.Entry{dup, dup}); !errors.Is(err, session.ErrDuplicateID) {
		t.Fatalf("duplicate inside a batch: %v", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	e := &session.Entry{Type: session.TypeMessage, ID: "a",
		Message: &session.Message{Role: "assistant", Content: session.BlocksContent(session.ContentBlock{Type: "toolCall", Body: &session.ToolCallBlock{Arguments: session.Raw(`{}`)}}), Body: &session.AssistantFields{Usage: &session.Usage{Input: 1}}}}
	c := e.Clone()
	c.Message.Content.Blocks[0].ToolCall().Arguments[0] = '['
	c.Message.Usage().Input = 2
	if e.Message.Content.Blocks[0].ToolCall().Arguments[0] != '{' || e.Message.Usage().Input != 1 {
		t.Fatal("Clone shares memory with the original")
	}
	// Every body type's own slices and pointers.
	comp := &session.Entry{Type: session.TypeCompaction, ID: "c", Body: &session.Compaction{Details: session.Raw(`{"a":1}`),
		RetainedTail: []session.Message{{Role: "user", Content: session.TextContent("t")}}, Usage: &session.Usage{Input: 1},
		SystemMessage: &session.Message{Role: "system", Content: session.TextContent("s")}}}
	cc := comp.Clone().Compaction()
	cc.Details[2] = 'b'
	cc.RetainedTail[0].Content.Blocks[0].Text = "changed"
	cc.Usage.Input = 2
	cc.SystemMessage.Content.Blocks[0].Text = "changed"
	if b := comp.Compaction(); b.Details[2] != 'a' || b.RetainedTail[0].Content.Blocks[0].Text != "t" || b.Usage.Input != 1 ||
		b.SystemMessage.Content.Blocks[0].Text != "s" {
		t.Fatal("Clone shares a compaction's memory with the original")
	}
	tools := &session.Entry{Type: session.TypeActiveToolsChange, ID: "t", Body: &session.ActiveToolsChange{ActiveTools: []string{"x"}}}
	tools.Clone().ActiveToolsChange().ActiveTools[0] = "y"
	if tools.ActiveToolsChange().ActiveTools[0] != "x" {
		t.Fatal("Clone shares active tools with the original")
	}
	custom := &session.Entry{Type: session.TypeCustomMessage, ID: "m", Body: &session.CustomMessage{Content: session.TextContent("c"), Details: session.Raw(`[1]`)}}
	cm := custom.Clone().CustomMessage()
	cm.Content.Blocks[0].Text, cm.Details[1] = "changed", '2'
	if b := custom.CustomMessage(); b.Content.Blocks[0].Text != "c" || b.Details[1] != '1' {
		t.Fatal("Clone shares a custom message's memory with the original")
	}
}

// A fork before an assistant message says so in English.
func TestForkBeforeNamesWhatItIs(t *testing.T) {
	ctx := context.Background()
	st := sessionkit.NewMemoryStore(sessiontest.TestHeader("g"))
	s, _ := session.New(st, sessiontest.TestConfig())
	a, err := s.AppendMessage(ctx, session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "p", Model: "m", StopReason: "stop"},
		Content: session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: "hi"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SelectFork(ctx, session.Before(a.ID)); err == nil || !strings.Contains(err.Error(), "is an assistant message, not a user message") {
		t.Fatalf("fork before an assistant message: %v", err)
	}
}

// ApplyChecked skips field validation (CheckBatch did it) but never where
// an entry goes: a taken id or a missing parent is refused, and nothing
// after it is applied.
func TestApplyCheckedKeepsTheTreeWhole(t *testing.T) {
	msg := func(id, parent string) *session.Entry {
		m := user("hi " + id)
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}
	}
	tests := []struct {
		name    string
		entries []*session.Entry
		err     error
		applied int
	}{
		{"a chain", []*session.Entry{msg("b", "a"), msg("c", "b")}, nil, 3},
		{"a taken id", []*session.Entry{msg("b", "a"), msg("a", "b"), msg("c", "b")}, session.ErrDuplicateID, 2},
		{"a missing parent", []*session.Entry{msg("b", "x")}, session.ErrParentNotFound, 1},
		{"a nil entry", []*session.Entry{nil}, session.ErrInvalidEntry, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree := session.NewTree(sessiontest.TestHeader("apply-checked"))
			if err := tree.Apply(msg("a", "")); err != nil {
				t.Fatal(err)
			}
			if err := tree.CheckBatch(context.Background(), tc.entries); (err == nil) != (tc.err == nil) {
				t.Fatalf("CheckBatch: %v", err)
			}
			err := tree.ApplyChecked(tc.entries)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("ApplyChecked: %v, want %v", err, tc.err)
			}
			if got := tree.Len(); got != tc.applied {
				t.Fatalf("%d entries in the tree, want %d", got, tc.applied)
			}
		})
	}
}

// FormatTime writes what time.Format writes, over the years and moments a
// hand-written formatter gets wrong first.
func TestFormatTimeIsTheLayout(t *testing.T) {
	moments := []time.Time{
		time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 1, time.FixedZone("x", -7*3600)),
		time.Unix(0, 0),
	}
	for i := range 2000 {
		moments = append(moments, time.Unix(int64(i)*987_654_321, int64(i)*7_777_777%1e9))
	}
	for _, m := range moments {
		if got, want := session.FormatTime(m), m.UTC().Format(session.TimeLayout); got != want {
			t.Errorf("FormatTime(%v) = %s, want %s", m, got, want)
		}
	}
}

// A listing says what a session is about: its first user message on one
// line, cut short; the model it used last; its tokens and cost.
func TestInfoSaysWhatASessionIsAbout(t *testing.T) {
	long := strings.Repeat("word ", 100)
	tree := session.NewTree(sessiontest.TestHeader("about"))
	entries := []*session.Entry{
		{Type: session.TypeMessage, ID: "u1", Timestamp: "2025-01-01T00:00:00.000Z", Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("  fix the\n\tretry loop  " + long), Timestamp: 1}},
		{Type: session.TypeModelChange, ID: "m1", ParentID: "u1", Timestamp: "2025-01-01T00:00:01.000Z", Body: &session.ModelChange{Provider: "anthropic", ModelID: "claude-x"}},
		{Type: session.TypeMessage, ID: "u2", ParentID: "m1", Timestamp: "2025-01-01T00:00:02.000Z", Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("second"), Timestamp: 2}},
	}
	for _, e := range entries {
		if err := tree.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	in := tree.Info()
	if !strings.HasPrefix(in.FirstMessage, "fix the retry loop word word") || len([]rune(in.FirstMessage)) != session.FirstUserRunes || strings.ContainsAny(in.FirstMessage, "\n\t") {
		t.Fatalf("first message %q (%d runes)", in.FirstMessage, len([]rune(in.FirstMessage)))
	}
	if in.Model != "claude-x" {
		t.Fatalf("model %q", in.Model)
	}
}
