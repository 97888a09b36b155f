package service_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// searchFixture is a service with a search index kept from its stream.
func searchFixture(t *testing.T) *fixture {
	t.Helper()
	b := servicetest.Partitioned(t, nc, 1)
	x, _, err := search.Open(search.DefaultConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	ix, err := search.Follow(ctx, x, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); ix.Close(context.Background()) })
	svc, cfg := servicetest.Start(t, nc, b, func(c *service.Config) { c.Search = x })
	f := &fixture{b: b, svc: svc, c: api.NewClient(nc, cfg.Subject), cfg: cfg}
	f.caughtUp = func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := ix.CaughtUp(cctx); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// genNode is an entry of a generated tree, as the brute force sees it.
type genNode struct {
	id, parent string
	compaction bool
	firstKept  string // of a compaction
}

// A search of a branch finds exactly the entries on the path from the
// root to the entry it names (the leaf by default), and marks those a
// compaction summarized as outside the context; a subtree search finds
// the entry and every one under it; a session search every branch. Each
// is checked against a brute-force walk of generated trees with many
// branches and compactions.
func TestSearchScopesAgainstABruteForceWalk(t *testing.T) {
	f := searchFixture(t)
	rng := rand.New(rand.NewPCG(7, 48))
	for round := range 3 {
		id := fmt.Sprintf("scoped%d", round)
		f.call(t, api.OpCreate, api.CreateRequest{ID: id}, nil)
		var nodes []genNode
		parentOf := map[string]string{}
		path := func(at string) []string { // root first
			var p []string
			for ; at != ""; at = parentOf[at] {
				p = append(p, at)
			}
			slices.Reverse(p)
			return p
		}
		var entries []any
		for i := range 80 {
			n := genNode{id: fmt.Sprintf("e%02d", i)}
			if i > 0 {
				n.parent = nodes[rng.IntN(len(nodes))].id
				if rng.IntN(3) > 0 {
					n.parent = nodes[len(nodes)-1].id // mostly on, sometimes off, the last branch
				}
			}
			// A compaction keeps from an entry on its own path.
			if p := path(n.parent); i > 3 && rng.IntN(6) == 0 && len(p) > 1 {
				n.compaction, n.firstKept = true, p[rng.IntN(len(p))]
			}
			parentOf[n.id] = n.parent
			nodes = append(nodes, n)
			e := map[string]any{"id": n.id, "parentId": n.parent, "timestamp": "2025-01-01T00:00:00.000Z"}
			if n.parent == "" {
				e["parentId"] = nil
			}
			if n.compaction {
				e["type"], e["summary"], e["firstKeptEntryId"], e["tokensBefore"] = "compaction", "needle summary "+n.id, n.firstKept, 100
			} else {
				e["type"], e["message"] = "message", map[string]any{"role": "user", "content": "needle " + n.id, "timestamp": 1}
			}
			entries = append(entries, e)
		}
		f.call(t, api.OpAppend, map[string]any{"session": id, "entries": entries}, nil)
		f.caughtUp()
		compactionOf := map[string]genNode{}
		for _, n := range nodes {
			if n.compaction {
				compactionOf[n.id] = n
			}
		}
		search := func(scope, at string) map[string]bool {
			t.Helper()
			var r api.SearchReply
			f.call(t, api.OpSearch, api.SearchRequest{Query: "needle", Session: id, Scope: scope, At: at, Limit: 1000}, &r)
			got := map[string]bool{}
			for _, h := range r.Hits {
				got[h.Entry] = h.OutsideContext
			}
			if int(r.Total) != len(got) {
				t.Fatalf("%s %s at %q: total %d for %d hits", id, scope, at, r.Total, len(got))
			}
			return got
		}
		leaf := nodes[len(nodes)-1].id
		for k := range 12 {
			at := nodes[rng.IntN(len(nodes))].id
			if k == 0 {
				at = "" // the leaf's branch
			}
			p := path(at)
			if at == "" {
				p = path(leaf)
			}
			// The brute force of the context: before the latest compaction
			// on the path, only from its first kept entry on; older
			// compactions show nothing.
			want := map[string]bool{}
			latest := -1
			for i := len(p) - 1; i >= 0; i-- {
				if _, ok := compactionOf[p[i]]; ok {
					latest = i
					break
				}
			}
			kept := 0
			if latest >= 0 {
				kept = slices.Index(p, compactionOf[p[latest]].firstKept)
			}
			for i, e := range p {
				_, isCompaction := compactionOf[e]
				inside := latest < 0 || i > latest || i == latest || (i >= kept && !isCompaction)
				want[e] = !inside
			}
			if got := search("", at); !mapsEqual(got, want) {
				t.Fatalf("%s: branch at %q:\n got %v\nwant %v", id, at, got, want)
			}
			if at == "" {
				continue
			}
			sub := map[string]bool{at: false}
			for _, n := range nodes { // parents come first
				if _, ok := sub[n.parent]; ok && n.id != at {
					sub[n.id] = false
				}
			}
			if got := search(api.ScopeSubtree, at); !mapsEqual(got, sub) {
				t.Fatalf("%s: subtree at %q:\n got %v\nwant %v", id, at, got, sub)
			}
		}
		if got := search(api.ScopeSession, ""); len(got) != len(nodes) {
			t.Fatalf("%s: the session's every branch: %d hits, want %d", id, len(got), len(nodes))
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A scope that is not one, or names what is not there, is refused with
// the field at fault; none reaches another session.
func TestSearchScopeRefusals(t *testing.T) {
	f := searchFixture(t)
	f.call(t, api.OpCreate, api.CreateRequest{ID: "sc"}, nil)
	for _, c := range []struct {
		req   api.SearchRequest
		code  api.Code
		field string
	}{
		{api.SearchRequest{Query: "x", Session: "sc", Scope: "everything"}, api.CodeBadRequest, "/scope"},
		{api.SearchRequest{Query: "x", Scope: api.ScopeBranch}, api.CodeBadRequest, "/session"},
		{api.SearchRequest{Query: "x", Session: "sc", Scope: api.ScopeSubtree}, api.CodeBadRequest, "/at"},
		{api.SearchRequest{Query: "x", Session: "sc", Scope: api.ScopeSession, At: "e1"}, api.CodeBadRequest, "/at"},
		{api.SearchRequest{Query: "x", Session: "sc", At: "no such"}, api.CodeBadRequest, "/at"},
		{api.SearchRequest{Query: "x", Session: "sc", At: "nosuch"}, api.CodeEntryNotFound, "/at"},
		{api.SearchRequest{Query: "x", Session: "other", At: "nosuch"}, api.CodeNotFound, ""},
		{api.SearchRequest{Query: "x", Since: "yesterday"}, api.CodeBadRequest, "/since"},
		{api.SearchRequest{Query: "x", Since: "2026-02-01T00:00:00Z", Until: "2026-01-01T00:00:00Z"}, api.CodeBadRequest, "/until"},
		{api.SearchRequest{Query: "re*"}, api.CodeBadRequest, "/query"},
		{api.SearchRequest{Query: "x", Tool: strings.Repeat("t", 2000)}, api.CodeBadRequest, "/tool"},
	} {
		err := f.callErr(api.OpSearch, c.req)
		var pe *api.Error
		if !errors.As(err, &pe) || pe.Code != c.code || pe.Field != c.field {
			t.Errorf("%+v: %v, want %s at %q", c.req, err, c.code, c.field)
		}
	}
}
