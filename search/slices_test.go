package search_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/search"
)

// A query whose rarest word is in more entries than ExactUpTo is ranked
// newest slice first, by relevance within each: its first page is the
// best of the newest entries, its pages cover every match once, its total
// counts them all. A rarer one is ranked by relevance across the index.
func TestSlicesRankNewestFirst(t *testing.T) {
	b := backend(t, 1)
	cfg := search.DefaultConfig("")
	cfg.SliceEntries, cfg.ExactUpTo = 10, 5
	x, _, err := search.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ix, err := search.Follow(context.Background(), x, b)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close(context.Background())
	var texts []string
	for i := range 100 {
		// Lengths differ, so scores do: relevance orders a slice.
		s := "common " + strings.Repeat("filler ", i%7)
		if i < 10 {
			s += " alpha"
		}
		if i >= 5 && i < 15 {
			s += " beta"
		}
		switch i {
		case 3:
			s = "common zebra zebra zebra"
		case 95:
			s = "common zebra " + strings.Repeat("padding words ", 20)
		}
		texts = append(texts, s)
	}
	ids := write(t, b, "s", texts...)
	caughtUp(t, ix)
	slice := map[string]int{}
	for i, id := range ids {
		slice[id] = i / 10
	}

	var all []string
	for offset := 0; offset < 100; offset += 15 {
		res := find(t, x, b, search.Query{Text: "common", Limit: 15, Offset: offset})
		// Estimated from the slices searched: here every entry matches,
		// so the estimate is exact.
		if res.Total != 100 || (offset < 80) != res.TotalEstimated {
			t.Fatalf("offset %d: total %d (estimated %v), want 100", offset, res.Total, res.TotalEstimated)
		}
		for k, h := range res.Hits {
			all = append(all, h.Entry)
			if k == 0 {
				continue
			}
			prev := res.Hits[k-1]
			switch {
			case slice[prev.Entry] < slice[h.Entry]:
				t.Fatalf("offset %d: %s (slice %d) before %s (slice %d): older first", offset, prev.Entry, slice[prev.Entry], h.Entry, slice[h.Entry])
			case slice[prev.Entry] == slice[h.Entry] && prev.Score < h.Score:
				t.Fatalf("offset %d: within slice %d, %s (%.3f) before %s (%.3f)", offset, slice[h.Entry], prev.Entry, prev.Score, h.Entry, h.Score)
			}
		}
		if offset == 0 {
			for _, h := range res.Hits[:10] {
				if slice[h.Entry] != 9 {
					t.Fatalf("the first ten hits are not the newest slice's: %s is in slice %d", h.Entry, slice[h.Entry])
				}
			}
		}
	}
	got, want := slices.Clone(all), slices.Clone(ids)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the pages hold %d hits (%d distinct), want each of %d once", len(all), len(slices.Compact(got)), len(want))
	}

	// zebra is in two entries: ranked across the index, the old entry
	// that says little else comes first.
	res := find(t, x, b, search.Query{Text: "zebra"})
	if len(res.Hits) != 2 || res.Total != 2 || res.Hits[0].Entry != ids[3] {
		t.Fatalf("a rare word: %+v, want %s first", res, ids[3])
	}
	// alpha and beta are each in ten entries (past ExactUpTo), together in
	// five of the oldest slice: the newest slices hold none, so the rest
	// are ranked together, and counted.
	res = find(t, x, b, search.Query{Text: "alpha beta"})
	var both []string
	for _, h := range res.Hits {
		both = append(both, h.Entry)
	}
	slices.Sort(both)
	if !slices.Equal(both, ids[5:10]) || res.Total != 5 || res.TotalEstimated {
		t.Fatalf("alpha beta: %v (total %d, estimated %v), want %v", both, res.Total, res.TotalEstimated, ids[5:10])
	}
	// With filters, and the rare word among common ones, the same.
	if res := find(t, x, b, search.Query{Text: "common zebra", Filter: search.Filter{Role: "assistant"}}); len(res.Hits) != 2 || res.Hits[0].Entry != ids[3] {
		t.Fatalf("common zebra: %+v", res)
	}
}
