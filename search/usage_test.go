package search_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// usageGen writes sessions of model calls and remembers each call that
// counts, for a scan to sum.
type usageGen struct {
	t     *testing.T
	b     *stream.Backend
	rng   *rand.Rand
	base  time.Time
	calls []usageCall
}

type usageCall struct {
	session, agent, cwd, day, model string
	turn                            bool
	input, output, cr, cw, tokens   int64
	cost                            float64
}

var usageModels = []string{"anthropic/claude-sonnet-4", "openai/gpt-5", "google/gemini-3"}

// session writes a session of n entries: user messages, assistant
// replies with usage (some with no text, only a tool call), and usage
// entries. A fork (parent set) first copies the parent's entries, as
// session.Fork does: they count in the parent only.
func (g *usageGen) session(sid string, n int, parent []*session.Entry) []*session.Entry {
	ctx := context.Background()
	agents := []struct{ name, source string }{{"pi", ""}, {"claude-code", "claude-code"}, {"codex", "codex"}}
	ag := agents[g.rng.IntN(len(agents))]
	cwd := []string{"/repo", "/repo/a", "/home/u/proj", ""}[g.rng.IntN(4)]
	made := g.base.Add(time.Duration(g.rng.IntN(20*24)) * time.Hour)
	h := session.Header{Version: 3, ID: sid, Timestamp: session.FormatTime(made), Cwd: cwd}
	if ag.source != "" {
		h.Metadata = session.Raw(`{"source":"` + ag.source + `"}`)
	}
	if parent != nil {
		h.ParentSession = "parent-of-" + sid
		made = g.base.Add(40 * 24 * time.Hour)
		h.Timestamp = session.FormatTime(made)
	}
	st, err := g.b.CreateStore(ctx, h)
	if err != nil {
		g.t.Fatal(err)
	}
	defer st.Close(ctx)
	var out []*session.Entry
	last := ""
	for _, e := range parent {
		if err := st.Append(ctx, e); err != nil {
			g.t.Fatal(err)
		}
		out, last = append(out, e), e.ID
	}
	for i := range n {
		at := made.Add(time.Duration(1+g.rng.IntN(5*24*60)) * time.Minute)
		e := &session.Entry{ID: fmt.Sprintf("%s-%d", sid, i), ParentID: last, Timestamp: session.FormatTime(at)}
		u := &session.Usage{Input: g.rng.Int64N(5000), Output: g.rng.Int64N(2000), CacheRead: g.rng.Int64N(100), CacheWrite: g.rng.Int64N(50)}
		if g.rng.IntN(3) > 0 {
			u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
		} // else left out, as pi 0.x did: derived from its parts
		u.Cost.Total = float64(g.rng.IntN(1000)) / 1000
		model := usageModels[g.rng.IntN(len(usageModels))]
		prov, name, _ := strings.Cut(model, "/")
		call := usageCall{session: sid, agent: session.AgentOf(h), cwd: cwd, day: at.UTC().Format(time.DateOnly), model: model,
			input: u.Input, output: u.Output, cr: u.CacheRead, cw: u.CacheWrite, tokens: u.Tokens(), cost: u.Cost.Total}
		switch g.rng.IntN(4) {
		case 0:
			e.Type = session.TypeMessage
			e.Message = &session.Message{Role: session.RoleUser, Content: session.TextContent("question")}
			call.session = ""
		case 1:
			e.Type, call.turn = session.TypeMessage, true
			e.Message = &session.Message{Role: session.RoleAssistant, Content: session.BlocksContent(session.ContentBlock{Type: session.BlockToolCall,
				Body: &session.ToolCallBlock{ID: "c", Name: "read", Arguments: session.Raw(`{}`)}}),
				Body: &session.AssistantFields{Provider: prov, Model: name, StopReason: "toolUse", Usage: u}}
		case 2:
			e.Type, call.turn = session.TypeMessage, true
			e.Message = &session.Message{Role: session.RoleAssistant, Content: session.TextContent("an answer"),
				Body: &session.AssistantFields{Provider: prov, Model: name, StopReason: "stop", Usage: u}}
		default:
			e.Type = session.TypeUsage
			e.Body = &session.UsageRecord{Kind: "compaction", Provider: prov, Model: name, Usage: u}
		}
		if err := st.Append(ctx, e); err != nil {
			g.t.Fatal(err)
		}
		if call.session != "" {
			g.calls = append(g.calls, call)
		}
		out, last = append(out, e), e.ID
	}
	return out
}

// scan sums the calls as a report of req should.
func (g *usageGen) scan(req api.UsageRequest, skip map[string]bool) api.UsageReport {
	req, since, until, err := req.Checked()
	if err != nil {
		g.t.Fatal(err)
	}
	rows := map[string]*api.UsageRow{}
	sessions := map[string]bool{}
	want := api.UsageReport{By: req.By, Rows: []api.UsageRow{}}
	for _, c := range g.calls {
		if skip[c.session] || (since != "" && c.day < since) || (until != "" && c.day > until) ||
			(req.Model != "" && c.model != req.Model && !strings.HasSuffix(c.model, "/"+req.Model)) ||
			(req.Agent != "" && c.agent != req.Agent) || (req.Session != "" && c.session != req.Session) ||
			(req.Project != "" && c.cwd != req.Project && !strings.HasPrefix(c.cwd, req.Project+"/")) {
			continue
		}
		var r api.UsageRow
		for _, d := range req.By {
			switch d {
			case api.UsageByDay:
				r.Day = c.day
			case api.UsageByMonth:
				r.Month = c.day[:7]
			case api.UsageByModel:
				r.Model = c.model
			case api.UsageByProject:
				r.Project = c.cwd
			case api.UsageByAgent:
				r.Agent = c.agent
			case api.UsageBySession:
				r.Session = c.session
			}
		}
		k := fmt.Sprint(r)
		if rows[k] == nil {
			rows[k] = &r
		}
		for _, row := range []*api.UsageRow{rows[k], &want.Total} {
			if c.turn {
				row.Turns++
			} else {
				row.Calls++
			}
			row.Input, row.Output, row.CacheRead, row.CacheWrite = row.Input+c.input, row.Output+c.output, row.CacheRead+c.cr, row.CacheWrite+c.cw
			row.Tokens, row.Cost = row.Tokens+c.tokens, row.Cost+c.cost
		}
		sessions[c.session] = true
	}
	for _, r := range rows {
		want.Rows = append(want.Rows, *r)
	}
	want.Sessions, want.Groups = len(sessions), len(rows)
	return want
}

// sameReport compares a report with a scan's, rows in any order, costs
// to rounding.
func sameReport(got, want api.UsageReport) error {
	key := func(r api.UsageRow) string {
		return strings.Join([]string{r.Day, r.Month, r.Model, r.Project, r.Agent, r.Session}, "|")
	}
	// Rows are ordered by the dimensions in the order asked for.
	fields := func(r api.UsageRow) []string {
		var out []string
		for _, d := range got.By {
			out = append(out, map[string]string{api.UsageByDay: r.Day, api.UsageByMonth: r.Month, api.UsageByModel: r.Model,
				api.UsageByProject: r.Project, api.UsageByAgent: r.Agent, api.UsageBySession: r.Session}[d])
		}
		return out
	}
	same := func(a, b api.UsageRow) bool {
		return key(a) == key(b) && a.Turns == b.Turns && a.Calls == b.Calls && a.Input == b.Input && a.Output == b.Output &&
			a.CacheRead == b.CacheRead && a.CacheWrite == b.CacheWrite && a.Tokens == b.Tokens && math.Abs(a.Cost-b.Cost) < 1e-6
	}
	if got.Sessions != want.Sessions || got.Groups != want.Groups || !same(got.Total, want.Total) {
		return fmt.Errorf("total %+v over %d sessions in %d groups, the scan: %+v over %d in %d", got.Total, got.Sessions, got.Groups, want.Total, want.Sessions, want.Groups)
	}
	if got.Total.Turns+got.Total.Calls > 0 && math.Abs(got.Total.TokensPerTurn-float64(got.Total.Tokens)/float64(got.Total.Turns+got.Total.Calls)) > 1e-9 {
		return fmt.Errorf("tokens per turn %v", got.Total.TokensPerTurn)
	}
	wantRows := map[string]api.UsageRow{}
	for _, r := range want.Rows {
		wantRows[key(r)] = r
	}
	if len(got.Rows) != len(want.Rows) {
		return fmt.Errorf("%d rows, the scan %d", len(got.Rows), len(want.Rows))
	}
	for i, r := range got.Rows {
		if !same(r, wantRows[key(r)]) {
			return fmt.Errorf("row %+v, the scan %+v", r, wantRows[key(r)])
		}
		if i > 0 && slices.Compare(fields(got.Rows[i-1]), fields(r)) >= 0 {
			return fmt.Errorf("rows out of order: %q before %q", key(got.Rows[i-1]), key(r))
		}
	}
	return nil
}

// Usage across sessions, per dimension and filter, equals a scan of the
// calls written; a fork's copies count once; a deleted session leaves it;
// the index on disk resumes without counting anything twice.
func TestUsageAgainstAScan(t *testing.T) {
	b := backend(t, 2)
	g := &usageGen{t: t, b: b, rng: rand.New(rand.NewPCG(7, 3)), base: time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)}
	dir := filepath.Join(t.TempDir(), "index")
	g.session("early", 40, nil) // before the indexer: its header is read, not seen
	x, ix, _ := follow(t, b, dir)
	var parent []*session.Entry
	for i := range 10 {
		es := g.session(fmt.Sprintf("s%d", i), 40, nil)
		if i == 3 {
			parent = es[:25]
		}
	}
	g.session("fork", 10, parent)
	caughtUp(t, ix)
	requests := []api.UsageRequest{
		{},
		{By: []string{}},
		{By: []string{api.UsageByMonth, api.UsageByAgent}},
		{By: []string{api.UsageByProject}},
		{By: []string{api.UsageBySession, api.UsageByModel}},
		{By: []string{api.UsageByModel}, Model: "gpt-5"},
		{By: []string{api.UsageByModel}, Model: "anthropic/claude-sonnet-4"},
		{By: []string{api.UsageByDay}, Since: "2026-03-01", Until: "2026-03-05T23:00:00+02:00"},
		{By: []string{api.UsageByAgent}, Project: "/repo"},
		{By: []string{api.UsageByDay}, Agent: "codex", Session: "s2"},
		{Session: "fork"},
	}
	check := func(when string, skip map[string]bool) {
		t.Helper()
		for _, req := range requests {
			got, err := x.Usage(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %+v: %v", when, req, err)
			}
			if err := sameReport(got, g.scan(req, skip)); err != nil {
				// The indexer's state says whether a batch failed (its
				// entries would be missing) or it was still behind.
				t.Errorf("%s: %+v: %v (indexer %+v)", when, req, err, ix.Status())
			}
		}
	}
	check("followed", nil)
	if rep, _ := x.Usage(context.Background(), api.UsageRequest{Session: "fork"}); rep.Total.Turns+rep.Total.Calls == 0 {
		t.Fatal("the fork's own calls are not counted")
	}

	// Closed and opened again: read back, and the stream followed from
	// where the index stopped (nothing twice).
	ix.Close(context.Background())
	x.Close()
	x, ix, rebuilt := follow(t, b, dir)
	if rebuilt {
		t.Fatal("the index on disk was rebuilt")
	}
	check("read back", nil)
	g.session("later", 40, nil)
	caughtUp(t, ix)
	check("resumed", nil)

	if err := b.Delete(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		rep, err := x.Usage(context.Background(), api.UsageRequest{Session: "s1"})
		if err != nil || rep.Sessions != 0 {
			return fmt.Errorf("the deleted session still counts: %+v %v", rep.Total, err)
		}
		return nil
	})
	check("after a delete", map[string]bool{"s1": true})

	// Limit cuts the rows, not the total.
	rep, err := x.Usage(context.Background(), api.UsageRequest{By: []string{api.UsageBySession}, Limit: 3})
	if err != nil || len(rep.Rows) != 3 || !rep.Cut || rep.Groups != rep.Sessions || rep.Total.Tokens != g.scan(api.UsageRequest{}, map[string]bool{"s1": true}).Total.Tokens {
		t.Fatalf("limited: %d rows, cut %v, %d groups: %v", len(rep.Rows), rep.Cut, rep.Groups, err)
	}
}

func TestUsageRequestsRefused(t *testing.T) {
	x, _, err := search.Open(search.DefaultConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, c := range []struct {
		req   api.UsageRequest
		field string
	}{
		{api.UsageRequest{By: []string{"week"}}, "/by"},
		{api.UsageRequest{By: []string{"day", "day"}}, "/by"},
		{api.UsageRequest{By: slices.Repeat([]string{"day"}, 7)}, "/by"},
		{api.UsageRequest{Limit: -1}, "/limit"},
		{api.UsageRequest{Since: "yesterday"}, "/since"},
		{api.UsageRequest{Since: "2026-03-02", Until: "2026-03-01"}, "/until"},
		{api.UsageRequest{Model: "\xff"}, "/model"},
		{api.UsageRequest{Project: strings.Repeat("a", 5000)}, "/project"},
	} {
		_, err := x.Usage(context.Background(), c.req)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeBadRequest || ae.Field != c.field {
			t.Errorf("%+v: %v, want a bad request at %s", c.req, err, c.field)
		}
	}
}

// An entry's document can never take a usage document's place: a session
// named "usage" whose entry's id is another session's id and a '/' leaves
// that session's usage as it was, after the index is opened again too.
func TestUsageDocumentsApartFromEntries(t *testing.T) {
	b := backend(t, 1)
	g := &usageGen{t: t, b: b, rng: rand.New(rand.NewPCG(1, 1)), base: time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)}
	dir := filepath.Join(t.TempDir(), "index")
	x, ix, _ := follow(t, b, dir)
	g.session("victim", 20, nil)
	ctx := context.Background()
	st, err := b.CreateStore(ctx, session.Header{Version: 3, ID: "usage", Timestamp: session.FormatTime(g.base)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, &session.Entry{Type: session.TypeMessage, ID: "victim/", Timestamp: session.FormatTime(g.base),
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("an entry whose id ends in a slash")}}); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	caughtUp(t, ix)
	want := g.scan(api.UsageRequest{Session: "victim"}, nil)
	check := func(when string) {
		t.Helper()
		got, err := x.Usage(ctx, api.UsageRequest{Session: "victim"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sameReport(got, want); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	check("followed")
	ix.Close(ctx)
	x.Close()
	x, _, _ = follow(t, b, dir)
	check("read back")
}
