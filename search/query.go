package search

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	bsearch "github.com/blevesearch/bleve/v2/search"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/parallel"
)

// Query is a search.
type Query struct {
	// Text: every word must appear in an entry's text, in any case; in
	// double quotes, the words in that order.
	Text string
	// Session, when set, searches that session only.
	Session string
	// Scope, when set, searches these entries of Session only (a branch,
	// a subtree: BranchScope, SubtreeScope), read from the session's tree
	// by the caller.
	Scope *Scope
	// Filter narrows the search by the entries' facets.
	Filter Filter
	// Limit (default 20) and Offset page the hits, best first;
	// Offset+Limit is at most Config.MaxResults.
	Limit, Offset int
}

// Hit is one entry found, and Result a page of hits, best first: the
// protocol's own types, so that a service answers with what the index
// returns.
type (
	Hit    = api.SearchHit
	Result = api.SearchReply
)

// Exists tells whether a session still exists; hits of the others are
// left out of a result (and forgotten).
type Exists func(ctx context.Context, sessionID string) (bool, error)

// DefaultLimit is a page of hits when Query.Limit is 0.
const DefaultLimit = 20

// snippetBytes is about how much text a snippet shows.
const snippetBytes = 240

// Search runs q. exists, when not nil, drops hits of sessions deleted
// since they were indexed.
func (x *Index) Search(ctx context.Context, q Query, exists Exists) (Result, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0:
		return Result{}, &QueryError{"limit", fmt.Sprintf("%d is negative", limit)}
	}
	if q.Offset < 0 {
		return Result{}, &QueryError{"offset", fmt.Sprintf("%d is negative", q.Offset)}
	}
	if q.Offset+limit > x.cfg.MaxResults {
		return Result{}, &QueryError{"limit", fmt.Sprintf("offset+limit %d is over %d", q.Offset+limit, x.cfg.MaxResults)}
	}
	bq, err := x.compile(q)
	if err != nil {
		return Result{}, err
	}
	var res Result
	res.Hits = []Hit{}
	// Hits of deleted sessions are dropped and forgotten: a page is read
	// again, a little longer, until it is full of live ones.
	gone := map[string]bool{}
	err = x.read(func() error {
		exact := q.Session != "" || q.Filter.Label != ""
		if q.Filter.Label != "" {
			ids, err := x.labelled(ctx, q.Filter.Label)
			if err != nil || len(ids) == 0 {
				return err
			}
			bq = bleve.NewConjunctionQuery(bq, bleve.NewDocIDQuery(ids))
		}
		if !exact {
			var err error
			if exact, err = x.exactly(ctx, q.Text); err != nil {
				return err
			}
		}
		for {
			need := q.Offset + limit + len(gone)*4
			rk, err := x.rank(ctx, bq, need, exact)
			if err != nil {
				return err
			}
			res.Total, res.TotalEstimated = rk.total, rk.estimated
			page := rk.ids[min(q.Offset, len(rk.ids)):]
			more, err := checkSessions(ctx, page, exists, gone)
			if err != nil {
				return err
			}
			var ids []string
			for _, id := range page {
				if sid, _, _ := strings.Cut(id, "/"); !gone[sid] && len(ids) < limit {
					ids = append(ids, id)
				}
			}
			if more && len(rk.ids) >= need {
				continue
			}
			got, err := x.page(ctx, bq, ids)
			if err != nil {
				return err
			}
			for _, id := range ids {
				hit, ok := got[id]
				if !ok {
					continue // deleted between the passes
				}
				hit.Score = rk.scores[id]
				hit.OutsideContext = q.Scope != nil && q.Scope.Outside[hit.Entry]
				res.Hits = append(res.Hits, hit)
			}
			return nil
		}
	})
	if err != nil {
		return Result{}, err
	}
	for id := range gone {
		if err := x.Forget(ctx, id); err != nil {
			return res, err
		}
	}
	return res, nil
}

// checkSessions asks exists about the sessions of the hits ids not yet
// known gone, a few at a time, and marks those deleted in gone; more says
// some were.
func checkSessions(ctx context.Context, ids []string, exists Exists, gone map[string]bool) (more bool, err error) {
	if exists == nil {
		return false, nil
	}
	var ask []string
	seen := map[string]bool{}
	for _, id := range ids {
		if sid, _, _ := strings.Cut(id, "/"); !gone[sid] && !seen[sid] {
			seen[sid] = true
			ask = append(ask, sid)
		}
	}
	const atOnce = 16
	for len(ask) > 0 {
		batch := ask[:min(atOnce, len(ask))]
		ask = ask[len(batch):]
		live := make([]bool, len(batch))
		if err := parallel.Each(len(batch), func(i int) (err error) { live[i], err = exists(ctx, batch[i]); return err }); err != nil {
			return more, fmt.Errorf("search: %w", err)
		}
		for i, sid := range batch {
			if !live[i] {
				gone[sid], more = true, true
			}
		}
	}
	return more, nil
}

func hitOf(h *bsearch.DocumentMatch) Hit {
	str := func(k string) string { s, _ := h.Fields[k].(string); return s }
	hit := Hit{Session: str("session"), Entry: str("entry"), Type: str("type"), Role: str("role"), Timestamp: str("ts"), Score: h.Score}
	var spans [][2]int
	// The text's matches only: a search within a session matches its
	// session field too, at offsets of that field.
	for _, locs := range h.Locations["text"] {
		for _, l := range locs {
			spans = append(spans, [2]int{int(l.Start), int(l.End)})
		}
	}
	hit.Snippet, hit.Matches = snippet(str("text"), spans)
	return hit
}

// snippet cuts text around the first match to about snippetBytes,
// returning the matches that fall in it, relative to it.
func snippet(text string, spans [][2]int) (string, [][2]int) {
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	start := 0
	if len(spans) > 0 && spans[0][0] > snippetBytes/3 {
		start = spans[0][0] - snippetBytes/3
	}
	end := min(len(text), start+snippetBytes)
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start++
	}
	for end < len(text) && end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	out := text[start:end]
	matches := [][2]int{}
	for _, s := range spans {
		if s[0] >= start && s[1] <= end {
			matches = append(matches, [2]int{s[0] - start, s[1] - start})
		}
	}
	return out, matches
}
