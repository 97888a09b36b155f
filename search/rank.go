package search

import (
	"context"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Ranking. A query's hits are ranked by relevance across the whole index
// when it can match at most Config.ExactUpTo entries (its rarest word is
// that rare): scoring them all is cheap. A query that may match more —
// common words — is ranked newest first by slices: every entry indexed
// falls in a slice of Config.SliceEntries entries in the order the index
// took them in, and the slices are searched newest first, each ranked by
// relevance, until the page is full. So a common word costs what one
// slice does, however large the index grows, and its first hits are the
// best of the newest messages rather than any k of them.

// sliceWidth is the digits of a slice's number in its term (sorted as
// text, numbers in order).
const sliceWidth = 8

func sliceTerm(n uint64) string { return fmt.Sprintf("%0*d", sliceWidth, n) }

// sliceKey is where the index keeps how many entries it took in.
var sliceKey = []byte("sessionlog.taken")

// nextSlice is the slice of the next entry taken in.
func (x *Index) nextSlice() string {
	return sliceTerm((x.taken.Add(1) - 1) / uint64(x.cfg.SliceEntries))
}

// ranked is one pass's hits, best first, and how many entries match:
// estimated when older slices were not searched.
type ranked struct {
	ids       []string
	scores    map[string]float64
	total     uint64
	estimated bool
}

// rank finds the first need hits of bq: across the index when exact, else
// slice by slice, newest first.
func (x *Index) rank(ctx context.Context, bq query.Query, need int, exact bool) (ranked, error) {
	r := ranked{scores: map[string]float64{}}
	run := func(q query.Query, size int) (*bleve.SearchResult, error) {
		req := bleve.NewSearchRequestOptions(q, size, 0, false)
		sr, err := x.idx.SearchInContext(ctx, req)
		if err != nil && strings.Contains(err.Error(), "TooManyClauses") {
			return nil, &QueryError{"query", fmt.Sprintf("a prefix (*) or a typo-tolerant word (~) matches more than %d words: give it more letters", maxExpansion)}
		}
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		return sr, nil
	}
	// take adds sr's hits not taken yet, up to need.
	take := func(sr *bleve.SearchResult) {
		for _, h := range sr.Hits {
			if _, dup := r.scores[h.ID]; !dup && len(r.ids) < need {
				r.ids = append(r.ids, h.ID)
				r.scores[h.ID] = h.Score
			}
		}
	}
	top := x.taken.Load()
	if exact || top == 0 {
		sr, err := run(bq, need)
		if err != nil {
			return r, err
		}
		take(sr)
		r.total = sr.Total
		return r, nil
	}
	size := uint64(x.cfg.SliceEntries)
	// rest estimates the matches of the slices below s at the rate of
	// those searched.
	rest := func(s uint64) float64 { return float64(r.total) / float64(top-s*size) * float64(s*size) }
	s := (top - 1) / size
	for ; ; s-- {
		t := bleve.NewTermQuery(sliceTerm(s))
		t.SetField("slice")
		sr, err := run(bleve.NewConjunctionQuery(bq, t), need-len(r.ids))
		if err != nil {
			return r, err
		}
		take(sr)
		r.total += sr.Total
		if len(r.ids) >= need || s == 0 {
			break
		}
		// Sparse (a filter, words seldom together): when the slices left
		// hold few matches at the rate seen, they are ranked together
		// in one pass over the index (each slice's pass costs about what
		// the whole does when a term that spans them all leads), the
		// hits already taken left out, and the total counted.
		if rest(s) <= float64(x.cfg.ExactUpTo) {
			// The index's best need hold the need-len(r.ids) best of
			// the rest, whatever of r.ids they hold.
			sr, err := run(bq, need)
			if err != nil {
				return r, err
			}
			take(sr)
			r.total = sr.Total
			return r, nil
		}
	}
	if s > 0 {
		// The older slices' matches are estimated: counting them would
		// cost what ranking them does.
		r.total, r.estimated = r.total+uint64(rest(s)), true
	}
	return r, nil
}

// exactly tells whether the text's hits are few enough to rank across
// the index: a word it requires appears in at most Config.ExactUpTo
// entries. Prefixes and typo-tolerant words alone may match any number.
func (x *Index) exactly(ctx context.Context, text string) (bool, error) {
	adv, err := x.idx.Advanced()
	if err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	defer r.Close()
	analyzer := x.idx.Mapping().AnalyzerNamed("standard")
	for _, w := range strings.Fields(strings.ReplaceAll(text, `"`, " ")) {
		if strings.HasSuffix(w, "*") || strings.HasSuffix(w, "~") {
			continue
		}
		for _, tok := range analyzer.Analyze([]byte(w)) {
			n, err := docFreq(ctx, r, tok.Term)
			if err != nil {
				return false, err
			}
			if n <= uint64(x.cfg.ExactUpTo) {
				return true, nil
			}
		}
	}
	return false, nil
}

func docFreq(ctx context.Context, r index.IndexReader, term []byte) (uint64, error) {
	tfr, err := r.TermFieldReader(ctx, term, "text", false, false, false)
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	defer tfr.Close()
	return tfr.Count(), nil
}

// page reads the stored fields and the matches' locations of the hits
// ids (a page), in a second pass over those documents only: the first
// pass, which ranks, reads neither.
func (x *Index) page(ctx context.Context, bq query.Query, ids []string) (map[string]Hit, error) {
	out := map[string]Hit{}
	if len(ids) == 0 {
		return out, nil
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(bq, bleve.NewDocIDQuery(ids)), len(ids), 0, false)
	req.Fields = []string{"session", "entry", "type", "role", "ts", "text"}
	req.IncludeLocations = true
	sr, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for _, h := range sr.Hits {
		out[h.ID] = hitOf(h)
	}
	return out, nil
}
