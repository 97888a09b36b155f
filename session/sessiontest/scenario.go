package sessiontest

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/session"
)

// A scenario file drives the Session API step by step and checks the
// session after any step. Entries are named by "as" aliases; every id in
// an expectation is an alias ("" is the root / no leaf).
type scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Steps       []step `json:"steps"`
}

type step struct {
	Do      string `json:"do"`
	As      string `json:"as"`
	WantErr string `json:"wantErr"`

	Text         string          `json:"text"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	Usage        *usageSpec      `json:"usage"`
	ToolCalls    []toolCallSpec  `json:"toolCalls"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Level        string          `json:"level"`
	Tools        []string        `json:"tools"`
	Summary      string          `json:"summary"`
	FirstKept    string          `json:"firstKept"`
	TokensBefore int64           `json:"tokensBefore"`
	RetainedTail []string        `json:"retainedTail"` // user texts
	CustomType   string          `json:"customType"`
	Data         json.RawMessage `json:"data"`
	Display      bool            `json:"display"`
	Target       string          `json:"target"`
	Label        string          `json:"label"`
	To           *string         `json:"to"`
	Point        string          `json:"point"`

	Expect *expectation `json:"expect"`
}

type usageSpec struct {
	Input, Output, CacheRead, CacheWrite, TotalTokens int64
	Cost                                              float64
}

type toolCallSpec struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type expectation struct {
	Leaf          *string             `json:"leaf"`
	Branch        []string            `json:"branch"`
	Context       []string            `json:"context"`
	ThinkingLevel string              `json:"thinkingLevel"`
	Model         *string             `json:"model"`
	ActiveTools   []string            `json:"activeTools"`
	NoActiveTools bool                `json:"noActiveTools"`
	Compaction    *string             `json:"compaction"`
	Labels        map[string]string   `json:"labels"`
	Name          *string             `json:"name"`
	Children      map[string][]string `json:"children"`
	Roots         []string            `json:"roots"`
	Stats         *statsSpec          `json:"stats"`
	Fork          []string            `json:"fork"`
	ForkBefore    string              `json:"forkBefore"`
}

type statsSpec struct {
	Entries   int            `json:"entries"`
	ByRole    map[string]int `json:"byRole"`
	ToolCalls int            `json:"toolCalls"`
	Input     int64          `json:"input"`
	Output    int64          `json:"output"`
	Total     int64          `json:"totalTokens"`
	Cost      float64        `json:"cost"`
}

// errorNames maps wantErr values to the sentinels they mean.
var errorNames = map[string]error{
	"ErrEntryNotFound":  session.ErrEntryNotFound,
	"ErrInvalidTarget":  session.ErrInvalidTarget,
	"ErrInvalidEntry":   session.ErrInvalidEntry,
	"ErrDuplicateID":    session.ErrDuplicateID,
	"ErrParentNotFound": session.ErrParentNotFound,
}

func loadScenarios(t *testing.T) []scenario {
	names, err := fs.Glob(testdata, "testdata/scenarios/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scenarios under testdata/scenarios: %v", err)
	}
	var out []scenario
	for _, n := range names {
		data, err := testdata.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var sc scenario
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Name == "" {
			sc.Name = strings.TrimSuffix(path.Base(n), ".json")
		}
		out = append(out, sc)
	}
	return out
}

func runScenarios(t *testing.T, b Backend) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) { runScenario(t, b, sc) })
	}
}

type runner struct {
	t       *testing.T
	b       Backend
	store   session.Store
	sess    *session.Session
	cfg     session.Config
	alias   map[string]string // alias -> id
	aliasOf map[string]string // id -> alias
}

func runScenario(t *testing.T, b Backend, sc scenario) {
	ctx := context.Background()
	r := &runner{t: t, b: b, cfg: TestConfig(), alias: map[string]string{}, aliasOf: map[string]string{}}
	r.store = b.New(t, TestHeader("scenario-"+sc.Name))
	defer func() { r.store.Close(ctx) }()
	r.newSession()
	for i, st := range sc.Steps {
		where := fmt.Sprintf("step %d (%s)", i+1, st.Do)
		if st.Expect != nil {
			where = fmt.Sprintf("step %d (expect)", i+1)
		}
		r.step(ctx, where, st)
	}
}

func (r *runner) newSession() {
	s, err := session.New(r.store, r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sess = s
}

func (r *runner) id(alias string) string {
	if alias == "" {
		return ""
	}
	id, ok := r.alias[alias]
	if !ok {
		// Unknown aliases stand for ids that do not exist.
		return "missing-" + alias
	}
	return id
}

func (r *runner) name(id string) string {
	if a, ok := r.aliasOf[id]; ok {
		return a
	}
	return id
}

func (r *runner) step(ctx context.Context, where string, st step) {
	t := r.t
	if st.Expect != nil {
		r.expect(ctx, where, st.Expect)
		return
	}
	e, err := r.do(ctx, st)
	if st.WantErr != "" {
		want, ok := errorNames[st.WantErr]
		if !ok {
			t.Fatalf("%s: unknown wantErr %q", where, st.WantErr)
		}
		if err == nil || !errorsIs(err, want) {
			t.Fatalf("%s: error = %v, want %s", where, err, st.WantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if st.As != "" {
		if e == nil {
			t.Fatalf("%s: no entry was written to name %q", where, st.As)
		}
		r.alias[st.As] = e.ID
		r.aliasOf[e.ID] = st.As
	}
}

func (r *runner) do(ctx context.Context, st step) (*session.Entry, error) {
	s := r.sess
	switch st.Do {
	case "user":
		return s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(st.Text)})
	case "assistant":
		blocks := []session.ContentBlock{{Type: session.BlockText, Text: st.Text}}
		for _, tc := range st.ToolCalls {
			blocks = append(blocks, session.ContentBlock{Type: session.BlockToolCall, Body: &session.ToolCallBlock{ID: tc.ID, Name: tc.Name, Arguments: session.Raw(tc.Arguments)}})
		}
		m := session.Message{Role: session.RoleAssistant, Content: session.BlocksContent(blocks...), Body: &session.AssistantFields{API: "test", Provider: st.Provider, Model: st.Model, StopReason: "stop"}}
		if u := st.Usage; u != nil {
			m.Assistant().Usage = &session.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
				TotalTokens: u.TotalTokens, Cost: session.Cost{Total: u.Cost}}
		}
		return s.AppendMessage(ctx, m)
	case "toolResult":
		return s.AppendMessage(ctx, session.Message{Role: session.RoleToolResult, Body: &session.ToolResultFields{ToolCallID: st.ToolCallID, ToolName: st.ToolName, IsError: st.IsError}, Content: session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: st.Text})})
	case "thinking":
		return s.AppendThinkingLevelChange(ctx, st.Level)
	case "model":
		return s.AppendModelChange(ctx, st.Provider, st.Model)
	case "tools":
		return s.AppendActiveToolsChange(ctx, st.Tools)
	case "compaction":
		c := session.Compaction{Summary: st.Summary, FirstKeptEntryID: r.id(st.FirstKept), TokensBefore: st.TokensBefore}
		if st.RetainedTail != nil {
			c.RetainedTail = []session.Message{}
			for i, txt := range st.RetainedTail {
				c.RetainedTail = append(c.RetainedTail, session.Message{Role: session.RoleUser, Content: session.TextContent(txt), Timestamp: int64(i + 1)})
			}
		}
		return s.AppendCompaction(ctx, c)
	case "custom":
		return s.AppendCustom(ctx, st.CustomType, session.Raw(st.Data))
	case "customMessage":
		return s.AppendCustomMessage(ctx, session.CustomMessage{CustomType: st.CustomType, Content: session.TextContent(st.Text), Display: st.Display})
	case "label":
		return s.SetLabel(ctx, r.id(st.Target), st.Label)
	case "name":
		return s.SetName(ctx, st.Text)
	case "move":
		if st.To == nil {
			r.t.Fatalf("move needs \"to\"")
		}
		var opts []session.MoveOption
		if st.Summary != "" {
			opts = append(opts, session.WithBranchSummary(st.Summary, nil, false))
		}
		return s.MoveTo(ctx, r.id(*st.To), opts...)
	case "reopen":
		if r.b.Reopen != nil {
			r.store = r.b.Reopen(r.t, r.store)
			r.newSession()
		}
		return nil, nil
	case "fork":
		_, err := s.SelectFork(ctx, r.forkPoint(st))
		return nil, err
	}
	r.t.Fatalf("unknown step %q", st.Do)
	return nil, nil
}

func (r *runner) forkPoint(st step) session.ForkPoint {
	switch st.Point {
	case "at":
		return session.At(r.id(st.Target))
	case "before":
		return session.Before(r.id(st.Target))
	case "", "leaf":
		return session.FromLeaf()
	}
	r.t.Fatalf("unknown fork point %q", st.Point)
	return session.ForkPoint{}
}

// describe renders a context message as role:text for comparison.
func describe(m session.Message) string {
	switch m.Role {
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		return m.Role + ":" + m.Summary().Summary
	case session.RoleCustom:
		return "custom:" + m.Custom().CustomType + ":" + m.Text()
	}
	return m.Role + ":" + m.Text()
}

func (r *runner) expect(ctx context.Context, where string, x *expectation) {
	t := r.t
	t.Helper()
	s := r.sess
	if x.Leaf != nil {
		leaf, err := s.Leaf(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.name(leaf) != *x.Leaf {
			t.Errorf("%s: leaf = %q, want %q", where, r.name(leaf), *x.Leaf)
		}
	}
	if x.Branch != nil {
		br, err := s.Branch(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := r.names(ids(br)); !slices.Equal(got, x.Branch) {
			t.Errorf("%s: branch = %v, want %v", where, got, x.Branch)
		}
	}
	c, err := s.BuildContext(ctx)
	if err != nil {
		t.Fatalf("%s: BuildContext: %v", where, err)
	}
	if x.Context != nil {
		got := []string{}
		for _, m := range c.Messages {
			got = append(got, describe(*m))
		}
		if !slices.Equal(got, x.Context) {
			t.Errorf("%s: context =\n  %q\nwant\n  %q", where, got, x.Context)
		}
	}
	if x.ThinkingLevel != "" && c.ThinkingLevel != x.ThinkingLevel {
		t.Errorf("%s: thinking level = %q, want %q", where, c.ThinkingLevel, x.ThinkingLevel)
	}
	if x.Model != nil {
		got := ""
		if c.Model != nil {
			got = c.Model.Provider + "/" + c.Model.ModelID
		}
		if got != *x.Model {
			t.Errorf("%s: model = %q, want %q", where, got, *x.Model)
		}
	}
	if x.ActiveTools != nil && !slices.Equal(c.ActiveTools, x.ActiveTools) {
		t.Errorf("%s: active tools = %v, want %v", where, c.ActiveTools, x.ActiveTools)
	}
	if x.NoActiveTools && c.ActiveTools != nil {
		t.Errorf("%s: active tools = %v, want none set", where, c.ActiveTools)
	}
	if x.Compaction != nil {
		got := ""
		if c.Compaction != nil {
			got = r.name(c.Compaction.ID)
		}
		if got != *x.Compaction {
			t.Errorf("%s: compaction applied = %q, want %q", where, got, *x.Compaction)
		}
	}
	if x.Labels != nil {
		labels, err := s.Labels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, l := range labels {
			got[r.name(l.ID)] = l.Label
		}
		if fmt.Sprint(got) != fmt.Sprint(x.Labels) {
			t.Errorf("%s: labels = %v, want %v", where, got, x.Labels)
		}
		for alias, want := range x.Labels {
			if l, err := r.store.Label(ctx, r.id(alias)); err != nil || l != want {
				t.Errorf("%s: Store.Label(%s) = %q, %v; want %q", where, alias, l, err, want)
			}
		}
	}
	if x.Name != nil {
		n, err := s.Name(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != *x.Name {
			t.Errorf("%s: name = %q, want %q", where, n, *x.Name)
		}
	}
	if x.Children != nil || x.Roots != nil {
		r.expectTree(ctx, where, x)
	}
	if x.Stats != nil {
		r.expectStats(ctx, where, x.Stats)
	}
	if x.Fork != nil {
		r.expectFork(ctx, where, x)
	}
}

func (r *runner) names(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = r.name(id)
	}
	return out
}

func (r *runner) expectTree(ctx context.Context, where string, x *expectation) {
	t := r.t
	v, err := r.sess.Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if x.Roots != nil {
		var roots []string
		for _, n := range v.Roots {
			roots = append(roots, r.name(n.Entry.ID))
		}
		if !slices.Equal(roots, x.Roots) {
			t.Errorf("%s: roots = %v, want %v", where, roots, x.Roots)
		}
	}
	got := map[string][]string{}
	walk(v.Roots, func(n *session.Node) {
		for _, c := range n.Children {
			got[r.name(n.Entry.ID)] = append(got[r.name(n.Entry.ID)], r.name(c.Entry.ID))
		}
	})
	for parent, want := range x.Children {
		if !slices.Equal(got[parent], want) && !(len(want) == 0 && len(got[parent]) == 0) {
			t.Errorf("%s: children of %s = %v, want %v", where, parent, got[parent], want)
		}
	}
}

func (r *runner) expectStats(ctx context.Context, where string, want *statsSpec) {
	t := r.t
	st, err := r.sess.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != want.Entries || st.ToolCalls != want.ToolCalls || st.Usage.Input != want.Input ||
		st.Usage.Output != want.Output || st.Usage.TotalTokens != want.Total || fmt.Sprintf("%.6f", st.Usage.Cost.Total) != fmt.Sprintf("%.6f", want.Cost) {
		t.Errorf("%s: stats = %+v, want %+v", where, st, *want)
	}
	if want.ByRole != nil && fmt.Sprint(st.ByRole) != fmt.Sprint(want.ByRole) {
		t.Errorf("%s: messages by role = %v, want %v", where, st.ByRole, want.ByRole)
	}
}

func (r *runner) expectFork(ctx context.Context, where string, x *expectation) {
	t := r.t
	// The fork point of an expectation is given by forkBefore or, with
	// "at:alias" / "leaf" as the first element, by Fork itself.
	p := session.FromLeaf()
	want := x.Fork
	if x.ForkBefore != "" {
		p = session.Before(r.id(x.ForkBefore))
	} else if len(want) > 0 && strings.HasPrefix(want[0], "at:") {
		p = session.At(r.id(strings.TrimPrefix(want[0], "at:")))
		want = want[1:]
	}
	sel, err := r.sess.SelectFork(ctx, p)
	if err != nil {
		t.Fatalf("%s: SelectFork(%v): %v", where, p, err)
	}
	got := r.names(ids(sel.Entries))
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s: fork %v copies %v, want %v", where, p, got, want)
	}
	for i, e := range sel.Entries {
		wantParent := ""
		if i > 0 {
			wantParent = sel.Entries[i-1].ID
		}
		if e.ParentID != wantParent {
			t.Errorf("%s: fork entry %s has parent %q, want %q", where, r.name(e.ID), e.ParentID, wantParent)
		}
	}
}
