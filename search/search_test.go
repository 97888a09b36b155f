package search_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

var (
	node    *cluster.Node
	streams atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.RunWithNode("sessionlog-search-test-", nil, func(n *cluster.Node, _ *nats.Conn) int {
		node = n
		return m.Run()
	}))
}

func backend(t testing.TB, partitions int) *stream.Backend {
	t.Helper()
	nc, err := nats.Connect(node.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	n := streams.Add(1)
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix, cfg.Partitions = fmt.Sprintf("S%d", n), fmt.Sprintf("s%d", n), partitions
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return b
}

// follow opens the index in dir ("" in memory) and follows b.
func follow(t testing.TB, b *stream.Backend, dir string) (*search.Index, *search.Indexer, bool) {
	t.Helper()
	cfg := search.DefaultConfig(dir)
	x, rebuilt, err := search.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := search.Follow(context.Background(), x, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ix.Close(context.Background())
		x.Close()
	})
	return x, ix, rebuilt
}

func write(t testing.TB, b *stream.Backend, id string, texts ...string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := b.Open(ctx, id)
	if errors.Is(err, session.ErrSessionNotFound) {
		st, err = b.Create(ctx, sessiontest.TestHeader(id))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	s, _ := session.New(st, sessiontest.TestConfig())
	var ids []string
	for i, text := range texts {
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		e, err := s.AppendMessage(ctx, sessiontest.Msg(role, text))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

func caughtUp(t testing.TB, ix *search.Indexer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ix.CaughtUp(ctx); err != nil {
		t.Fatalf("caught up: %v (%+v)", err, ix.Status())
	}
}

func find(t testing.TB, x *search.Index, b *stream.Backend, q search.Query) search.Result {
	t.Helper()
	res, err := x.Search(context.Background(), q, exists(b))
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return res
}

func exists(b *stream.Backend) search.Exists {
	return func(ctx context.Context, id string) (bool, error) {
		return b.Exists(ctx, id)
	}
}

func TestSearchFindsRankedWithSnippets(t *testing.T) {
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprintf("P=%d", parts), func(t *testing.T) {
			b := backend(t, parts)
			x, ix, _ := follow(t, b, "")
			a := write(t, b, "alpha", "the flux capacitor needs 1.21 gigawatts of power to travel in time", "I will find plutonium", "Flux capacitor: FLUX!")
			write(t, b, "beta", "nothing to see here", "capacitor alone")
			g := write(t, b, "gamma", strings.Repeat("filler words ", 100)+"and a flux capacitor at last, "+strings.Repeat("more filler ", 100))
			caughtUp(t, ix)
			res := find(t, x, b, search.Query{Text: "flux capacitor"})
			if res.Total != 3 || len(res.Hits) != 3 {
				t.Fatalf("flux capacitor: %+v", res)
			}
			// The short entry saying flux twice ranks first, the long
			// one saying it once in filler last.
			if res.Hits[0].Entry != a[2] || res.Hits[1].Entry != a[0] || res.Hits[2].Entry != g[0] {
				t.Fatalf("ranking: %v, want %s, %s, %s", res.Hits, a[2], a[0], g[0])
			}
			h := res.Hits[0]
			if h.Session != "alpha" || h.Role != session.RoleUser || h.Type != string(session.TypeMessage) || h.Timestamp == "" {
				t.Fatalf("hit %+v", h)
			}
			// A snippet of a long text is cut around its match.
			long := res.Hits[2]
			if len(long.Snippet) > 300 || len(long.Matches) != 2 || !strings.Contains(long.Snippet, "flux capacitor") {
				t.Fatalf("snippet %q matches %v", long.Snippet, long.Matches)
			}
			for _, h := range res.Hits {
				for _, m := range h.Matches {
					if w := strings.ToLower(h.Snippet[m[0]:m[1]]); w != "flux" && w != "capacitor" {
						t.Fatalf("match %v in the snippet %q is %q", m, h.Snippet, w)
					}
				}
			}
			// A phrase keeps the order; a session narrows the search.
			if res := find(t, x, b, search.Query{Text: `"capacitor flux needs"`}); res.Total != 0 {
				t.Fatalf("phrase out of order found %+v", res.Hits)
			}
			if res := find(t, x, b, search.Query{Text: `"flux capacitor needs"`}); res.Total != 1 || res.Hits[0].Entry != a[0] {
				t.Fatalf("phrase: %+v", res.Hits)
			}
			res = find(t, x, b, search.Query{Text: "capacitor", Session: "beta"})
			if res.Total != 1 || res.Hits[0].Session != "beta" {
				t.Fatalf("in beta: %+v", res)
			}
			// Within a session, the matches are still the text's.
			if m := res.Hits[0].Matches; len(m) != 1 || res.Hits[0].Snippet[m[0][0]:m[0][1]] != "capacitor" {
				t.Fatalf("matches within a session: %q %v", res.Hits[0].Snippet, m)
			}
		})
	}
}

func TestBadQueriesAreRefused(t *testing.T) {
	b := backend(t, 1)
	x, _, _ := follow(t, b, "")
	for _, tt := range []struct {
		q     search.Query
		field string
	}{
		{search.Query{Text: "  "}, "query"},
		{search.Query{Text: strings.Repeat("x", 2000)}, "query"},
		{search.Query{Text: strings.Repeat("w ", 40)}, "query"},
		{search.Query{Text: "\xff"}, "query"},
		{search.Query{Text: "x", Limit: -1}, "limit"},
		{search.Query{Text: "x", Offset: -1}, "offset"},
		{search.Query{Text: "x", Limit: 900, Offset: 200}, "limit"},
		{search.Query{Text: "x", Session: "a.b"}, "session"},
	} {
		_, err := x.Search(context.Background(), tt.q, nil)
		var qe *search.QueryError
		if !errors.As(err, &qe) || qe.Field != tt.field || !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("query %+v: %v, want a QueryError on %s", tt.q, err, tt.field)
		}
	}
}

// A deleted session leaves the results: at once through the index watch,
// and at query time for deletions the indexer did not see.
func TestDeletedSessionsLeaveResults(t *testing.T) {
	b := backend(t, 1)
	x, ix, _ := follow(t, b, "")
	write(t, b, "keep", "zebra crossing")
	write(t, b, "gone", "zebra stripes")
	caughtUp(t, ix)
	if res := find(t, x, b, search.Query{Text: "zebra"}); len(res.Hits) != 2 {
		t.Fatalf("before: %+v", res)
	}
	if err := b.Delete(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	// Forgotten by the indexer's watch of deletions, before any search.
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n, _ := x.Count(); n != 1 {
			return fmt.Errorf("%d entries indexed, want 1", n)
		}
		return nil
	})
	res := find(t, x, b, search.Query{Text: "zebra"})
	if len(res.Hits) != 1 || res.Hits[0].Session != "keep" {
		t.Fatalf("after the delete: %+v", res)
	}
	// A search drops (and forgets) hits of a session deleted that the
	// index has not yet heard of.
	write(t, b, "gone2", "zebra herd")
	caughtUp(t, ix)
	ix.Close(context.Background())
	if err := b.Delete(context.Background(), "gone2"); err != nil {
		t.Fatal(err)
	}
	if res := find(t, x, b, search.Query{Text: "zebra"}); len(res.Hits) != 1 {
		t.Fatalf("after a delete the index did not hear of: %+v", res)
	}
	if n, _ := x.Count(); n != 1 {
		t.Fatalf("%d entries indexed, want 1", n)
	}
}

// The index on disk resumes where it stopped; removed, it is rebuilt from
// the stream; damaged, it is set aside and rebuilt.
func TestIndexResumesAndRebuilds(t *testing.T) {
	b := backend(t, 2)
	dir := filepath.Join(t.TempDir(), "index")
	write(t, b, "s1", "quantum tunnelling", "entangled photons")
	x, ix, rebuilt := follow(t, b, dir)
	if !rebuilt {
		t.Fatal("a new index did not say it starts empty")
	}
	caughtUp(t, ix)
	ix.Close(context.Background())
	x.Close()
	write(t, b, "s2", "quantum dots") // while no indexer runs

	x, ix, rebuilt = follow(t, b, dir)
	if rebuilt {
		t.Fatal("an index on disk was rebuilt")
	}
	caughtUp(t, ix)
	if res := find(t, x, b, search.Query{Text: "quantum"}); res.Total != 2 {
		t.Fatalf("resumed: %+v", res)
	}
	if st := ix.Status(); st.Indexed != 1 {
		t.Fatalf("resumed indexer took in %d entries, want only the one written while stopped", st.Indexed)
	}
	ix.Close(context.Background())
	x.Close()

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	x, ix, rebuilt = follow(t, b, dir)
	caughtUp(t, ix)
	if res := find(t, x, b, search.Query{Text: "quantum"}); !rebuilt || res.Total != 2 {
		t.Fatalf("rebuilt %v: %+v", rebuilt, res)
	}
	ix.Close(context.Background())
	x.Close()

	if err := os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	x, ix, rebuilt = follow(t, b, dir)
	caughtUp(t, ix)
	if res := find(t, x, b, search.Query{Text: "photons"}); !rebuilt || res.Total != 1 {
		t.Fatalf("damaged, rebuilt %v: %+v", rebuilt, res)
	}
	if aside, _ := filepath.Glob(dir + ".broken-*"); len(aside) != 1 {
		t.Fatalf("the damaged index was not set aside: %v", aside)
	}
	ix.Close(context.Background())
	x.Close()

	// An index another version made (what it holds of an entry differs)
	// is set aside and rebuilt, facets and all.
	old, err := bleve.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetInternal([]byte("sessionlog.schema"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	old.Close()
	x, ix, rebuilt = follow(t, b, dir)
	caughtUp(t, ix)
	if res := find(t, x, b, search.Query{Text: "quantum", Filter: search.Filter{Role: "user"}}); !rebuilt || res.Total != 2 {
		t.Fatalf("of another version, rebuilt %v: %+v", rebuilt, res)
	}
	if aside, _ := filepath.Glob(dir + ".schema1-*"); len(aside) != 1 {
		t.Fatalf("the index of another version was not set aside: %v", aside)
	}
}

// What one entry can put in the index is bounded.
func TestIndexedTextIsBounded(t *testing.T) {
	b := backend(t, 1)
	x, ix, _ := follow(t, b, "")
	cfg := search.DefaultConfig("")
	// Under the offload threshold (content past it is not indexed).
	write(t, b, "big", "needle "+strings.Repeat("hay ", cfg.MaxTextBytes/3)+" lateneedle")
	caughtUp(t, ix)
	if res := find(t, x, b, search.Query{Text: "needle"}); res.Total != 1 {
		t.Fatalf("the start of a large text: %+v", res)
	}
	if res := find(t, x, b, search.Query{Text: "lateneedle"}); res.Total != 0 {
		t.Fatalf("text past MaxTextBytes was indexed: %+v", res)
	}
}
