package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
)

// genEntry is a generated entry as the scan sees it.
type genEntry struct {
	session, id, role, model, cwd, agent string
	tools, paths                         []string
	at                                   time.Time
}

// Every filter, alone and with another, finds exactly what a scan of the
// generated entries finds: roles, tools called and answered, files named
// by tool-call arguments (and the directories above them), models,
// agents, working directories and time windows. Sessions made before the
// indexer started get their header's facets too (read from the stream).
func TestFiltersAgainstAScan(t *testing.T) {
	b := backend(t, 2)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 9))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tools := []string{"read", "edit", "bash", "grep"}
	files := []string{"/repo/a/main.go", "/repo/a/util.go", "/repo/b/doc.md", "/tmp/x.txt"}
	models := []string{"anthropic/claude-sonnet-4", "openai/gpt-5"}
	agents := []struct{ name, source string }{{"pi", ""}, {"claude-code", "claude-code"}, {"codex", "codex"}}
	var all []genEntry
	write := func(sid string, n int) {
		ag := agents[rng.IntN(len(agents))]
		cwd := []string{"/repo", "/repo/a", "/home/u/proj"}[rng.IntN(3)]
		h := session.Header{Version: 3, ID: sid, Timestamp: session.FormatTime(base), Cwd: cwd}
		if ag.source != "" {
			h.Metadata = session.Raw(`{"source":"` + ag.source + `"}`)
		}
		st, err := b.CreateStore(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		parent := ""
		for i := range n {
			at := base.Add(time.Duration(rng.IntN(30*24)) * time.Hour)
			g := genEntry{session: sid, id: fmt.Sprintf("%s-%d", sid, i), cwd: cwd, agent: session.AgentOf(h), at: at}
			var m session.Message
			switch rng.IntN(3) {
			case 0:
				g.role = "user"
				m = session.Message{Role: session.RoleUser, Content: session.TextContent("findme user words")}
			case 1:
				g.role, g.model = "assistant", models[rng.IntN(len(models))]
				prov, model, _ := strings.Cut(g.model, "/")
				blocks := []session.ContentBlock{{Type: session.BlockText, Text: "findme assistant words"}}
				for range rng.IntN(3) {
					tool, file := tools[rng.IntN(len(tools))], files[rng.IntN(len(files))]
					g.tools = append(g.tools, tool)
					g.paths = append(g.paths, file)
					blocks = append(blocks, session.ContentBlock{Type: session.BlockToolCall,
						Body: &session.ToolCallBlock{ID: fmt.Sprintf("c%d", rng.Int()), Name: tool, Arguments: session.Raw(`{"file_path":"` + file + `","n":1}`)}})
				}
				m = session.Message{Role: session.RoleAssistant, Content: session.BlocksContent(blocks...),
					Body: &session.AssistantFields{Provider: prov, Model: model, StopReason: "stop"}}
			default:
				g.role = "toolResult"
				tool := tools[rng.IntN(len(tools))]
				g.tools = []string{tool}
				m = session.Message{Role: session.RoleToolResult, Content: session.TextContent("findme result words"),
					Body: &session.ToolResultFields{ToolCallID: "c", ToolName: tool}}
			}
			e := &session.Entry{Type: session.TypeMessage, ID: g.id, ParentID: parent, Timestamp: session.FormatTime(at), Message: &m}
			if err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			parent = g.id
			all = append(all, g)
		}
	}
	write("early", 30) // before the indexer: its header is read, not seen
	x, ix, _ := follow(t, b, "")
	for i := range 8 {
		write(fmt.Sprintf("s%d", i), 30)
	}
	caughtUp(t, ix)
	under := func(list []string, dir string) bool {
		return slices.ContainsFunc(list, func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") })
	}
	for _, c := range []struct {
		name string
		f    search.Filter
		keep func(g genEntry) bool
	}{
		{"role", search.Filter{Role: "toolResult"}, func(g genEntry) bool { return g.role == "toolResult" }},
		{"tool", search.Filter{Tool: "edit"}, func(g genEntry) bool { return slices.Contains(g.tools, "edit") }},
		{"file", search.Filter{Path: "/repo/a/main.go"}, func(g genEntry) bool { return slices.Contains(g.paths, "/repo/a/main.go") }},
		{"directory", search.Filter{Path: "/repo/a/"}, func(g genEntry) bool { return under(g.paths, "/repo/a") }},
		{"model", search.Filter{Model: models[1]}, func(g genEntry) bool { return g.model == models[1] }},
		{"agent", search.Filter{Agent: "claude-code"}, func(g genEntry) bool { return g.agent == "claude-code" }},
		{"cwd", search.Filter{Cwd: "/repo"}, func(g genEntry) bool { return g.cwd == "/repo" || strings.HasPrefix(g.cwd, "/repo/") }},
		{"window", search.Filter{Since: base.Add(5 * 24 * time.Hour), Until: base.Add(12 * 24 * time.Hour)},
			func(g genEntry) bool {
				return !g.at.Before(base.Add(5*24*time.Hour)) && g.at.Before(base.Add(12*24*time.Hour))
			}},
		{"tool and agent", search.Filter{Tool: "bash", Agent: "pi"}, func(g genEntry) bool { return slices.Contains(g.tools, "bash") && g.agent == "pi" }},
	} {
		var want []string
		for _, g := range all {
			if c.keep(g) {
				want = append(want, g.session+"/"+g.id)
			}
		}
		res := find(t, x, b, search.Query{Text: "findme", Filter: c.f, Limit: 1000})
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Session+"/"+h.Entry)
		}
		slices.Sort(got)
		slices.Sort(want)
		if len(want) == 0 || !slices.Equal(got, want) || int(res.Total) != len(want) {
			t.Errorf("%s: %d hits (total %d), the scan finds %d:\n got %v\nwant %v", c.name, len(got), res.Total, len(want), got, want)
		}
	}
}

// A prefix and a typo-tolerant word find what they should, and are
// bounded: too short a stem is refused, and one that matches too many
// words is refused rather than run.
func TestPrefixAndTypos(t *testing.T) {
	b := backend(t, 1)
	x, ix, _ := follow(t, b, "")
	write(t, b, "pt", "the refactoring of the parser", "a refactored lexer", "unrelated words")
	caughtUp(t, ix)
	count := func(q string) int {
		t.Helper()
		return int(find(t, x, b, search.Query{Text: q}).Total)
	}
	if n := count("refactor*"); n != 2 {
		t.Errorf("refactor*: %d hits, want 2", n)
	}
	if n := count("parsr~"); n != 1 {
		t.Errorf("parsr~ (a typo): %d hits, want 1", n)
	}
	if n := count(`"the parser" refac*`); n != 1 {
		t.Errorf("a phrase and a prefix: %d hits, want 1", n)
	}
	if _, err := x.Search(context.Background(), search.Query{Text: "re*"}, nil); err == nil {
		t.Error("a two-letter prefix was run")
	}
	// Words enough that a prefix of them passes the bound.
	for part := range 3 { // each entry's text is bounded (32 KiB): three of 2,000 words
		var many []string
		for i := range 2000 {
			many = append(many, fmt.Sprintf("zq%05d", part*2000+i))
		}
		write(t, b, "many", strings.Join(many, " "))
	}
	caughtUp(t, ix)
	if _, err := x.Search(context.Background(), search.Query{Text: "zq0*"}, nil); err == nil || !strings.Contains(err.Error(), "more letters") {
		t.Errorf("a prefix of more than the bound's words: %v", err)
	}
	if n := count("zq0001*"); n != 1 {
		t.Errorf("a narrower prefix: %d hits, want 1", n)
	}
}

// A branch of a session with no entry yet finds nothing, and says so
// without an error.
func TestEmptyScopeFindsNothing(t *testing.T) {
	b := backend(t, 1)
	x, ix, _ := follow(t, b, "")
	write(t, b, "full", "words to find")
	caughtUp(t, ix)
	sc, err := search.BranchScope(session.NewTree(session.Header{Version: 3, ID: "full"}), "")
	if err != nil {
		t.Fatal(err)
	}
	res := find(t, x, b, search.Query{Text: "words", Session: "full", Scope: &sc})
	if res.Total != 0 || len(res.Hits) != 0 {
		t.Fatalf("an empty scope found %+v", res)
	}
	if all := find(t, x, b, search.Query{Text: "words", Session: "full"}); all.Total != 1 {
		t.Fatalf("the session itself: %+v", all)
	}
}
