package search

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
)

// Facets are what an entry is filtered by besides its words: of the
// entry, its role, the tools it called or answered, the files their
// arguments named, the model that wrote it and its time; of its session,
// the agent that made it (session.AgentOf) and its working directory.
type Facets struct {
	Tools []string
	Paths []string // each path, and every directory above it
	Model string   // provider/model of an assistant's message
	Agent string
	Cwd   []string // the directory, and every one above it
	Time  time.Time
}

// SessionFacts are the facets of a session's header its entries carry.
type SessionFacts struct {
	Agent string
	Cwd   string
	// Forked, for a fork, is when it was made: its entries stamped no
	// later are copies of its parent's (their usage is the parent's).
	Forked time.Time
}

// FactsOf are a header's facets.
func FactsOf(h session.Header) SessionFacts {
	f := SessionFacts{Agent: session.AgentOf(h), Cwd: h.Cwd}
	if h.ParentSession != "" {
		f.Forked, _ = time.Parse(time.RFC3339Nano, h.Timestamp)
	}
	return f
}

func init() {
	// A prefix or a typo-tolerant word is a disjunction of the words it
	// matches: bounded, or one query could ask for the whole dictionary.
	// (A global of bleve's: this package is the module's one user.)
	searcher.DisjunctionMaxClauseCount = maxExpansion
}

// maxExpansion bounds the words a prefix or a typo-tolerant word matches.
const maxExpansion = 4096

// Bounds of what one entry adds to the index beside its text.
const (
	maxFacetValues = 64   // tools, paths
	maxFacetBytes  = 1024 // one value
	maxPathDepth   = 32   // directories above a path
)

// facetsOf are e's facets, in a session of facts.
func facetsOf(e *session.Entry, facts SessionFacts) Facets {
	f := Facets{Agent: facts.Agent, Cwd: withParents(facts.Cwd)}
	f.Time, _ = time.Parse(time.RFC3339Nano, e.Timestamp)
	m := e.Message
	if e.Type != session.TypeMessage || m == nil {
		return f
	}
	add := func(list *[]string, v string) {
		if v != "" && len(v) <= maxFacetBytes && utf8.ValidString(v) && len(*list) < maxFacetValues {
			*list = append(*list, v)
		}
	}
	if a := m.Assistant(); a != nil && a.Model != "" {
		f.Model = a.Provider + "/" + a.Model
	}
	if r := m.ToolResult(); r != nil {
		add(&f.Tools, r.ToolName)
	}
	for _, b := range m.Content.Blocks {
		tc := b.ToolCall()
		if tc == nil {
			continue
		}
		add(&f.Tools, tc.Name)
		for _, p := range argumentPaths(tc.Arguments) {
			for _, d := range withParents(p) {
				add(&f.Paths, d)
			}
		}
	}
	return f
}

// argumentPaths are the file paths a tool call's arguments name: the
// strings (or lists of strings) of members whose name speaks of a path
// or a file (path, file_path, filePath, notebook_path, paths, …).
func argumentPaths(args session.Raw) []string {
	var members map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &members) != nil {
		return nil // arguments that are not an object name no file
	}
	var out []string
	for k, v := range members {
		lk := strings.ToLower(k)
		if !strings.Contains(lk, "path") && !strings.Contains(lk, "file") {
			continue
		}
		var one string
		var many []string
		if json.Unmarshal(v, &one) == nil {
			out = append(out, one)
		} else if json.Unmarshal(v, &many) == nil {
			out = append(out, many...)
		}
	}
	return out
}

// withParents is p, cleaned, and every directory above it: a filter by a
// directory is then one term, whatever lies under it.
func withParents(p string) []string {
	if p == "" || strings.ContainsAny(p, "\x00\n") {
		return nil
	}
	p = path.Clean(p)
	out := []string{p}
	for d := path.Dir(p); d != p && len(out) < maxPathDepth; p, d = d, path.Dir(d) {
		if d == "." {
			break
		}
		out = append(out, d)
	}
	return out
}

// Filter narrows a search to entries with these facets; zero members do
// not narrow it.
type Filter struct {
	Role  string // user, assistant, toolResult, a custom message's type…
	Tool  string // a tool called, or answered
	Path  string // a file a tool call's arguments named, or a directory above one
	Model string // provider/model
	Agent string // pi, claude-code, codex, langgraph, openai-agents
	Cwd   string // the session's working directory, or one above it
	Label string // the entry's label (the latest label entry naming it)
	// Since and Until bound the entry's time: Since <= t < Until.
	Since, Until time.Time
}

// filterQueries are f's conditions as bleve queries.
func (f Filter) queries() ([]query.Query, error) {
	var out []query.Query
	term := func(name, field, v string, clean bool) error {
		if v == "" {
			return nil
		}
		if len(v) > maxFacetBytes || !utf8.ValidString(v) {
			return &QueryError{name, fmt.Sprintf("must be valid UTF-8 of at most %d bytes", maxFacetBytes)}
		}
		if clean {
			v = path.Clean(v)
		}
		q := bleve.NewTermQuery(v)
		q.SetField(field)
		out = append(out, q)
		return nil
	}
	for _, c := range []struct {
		name, field, v string
		clean          bool
	}{{"role", "role", f.Role, false}, {"tool", "tools", f.Tool, false}, {"path", "paths", f.Path, true}, {"model", "model", f.Model, false},
		{"agent", "agent", f.Agent, false}, {"cwd", "cwd", f.Cwd, true}} {
		if err := term(c.name, c.field, c.v, c.clean); err != nil {
			return nil, err
		}
	}
	if len(f.Label) > maxFacetBytes || !utf8.ValidString(f.Label) {
		return nil, &QueryError{"label", fmt.Sprintf("must be valid UTF-8 of at most %d bytes", maxFacetBytes)}
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
			return nil, &QueryError{"until", "must be after since"}
		}
		in, ex := true, false
		q := bleve.NewDateRangeInclusiveQuery(f.Since, f.Until, &in, &ex)
		q.SetField("time")
		out = append(out, q)
	}
	return out, nil
}

// FilterOf is the filter a protocol request asks for, or what is wrong
// with its time bounds.
func FilterOf(r *api.SearchRequest) (Filter, error) {
	since, until, err := r.Window()
	if err != nil {
		return Filter{}, err
	}
	return Filter{Role: r.Role, Tool: r.Tool, Path: r.Path, Model: r.Model, Agent: r.Agent, Cwd: r.Cwd, Label: r.Label, Since: since, Until: until}, nil
}
