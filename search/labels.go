package search

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/agentcore/sessionlog/session"
)

// Labels. A label entry names an entry and a label (empty: cleared); the
// latest label entry of an entry is its label. The index keeps each
// label entry as a document of its own (no text: no search finds it),
// and a search filtered by a label finds the entries whose latest label
// entry gives them that label, then searches those only.

// labelType is the type of a label entry's document.
const labelType = "label"

// maxLabelled bounds the entries a label filter may stand for, and
// maxLabelDocs the label entries read to find them (relabels included).
const (
	maxLabelled  = maxExpansion
	maxLabelDocs = 4 * maxLabelled
)

// labelDoc is what the index holds of a label entry.
type labelDoc struct {
	Session string `json:"session"`
	Type    string `json:"type"`
	Label   string `json:"label"`
	Target  string `json:"target"` // the labelled entry's document
	Seq     string `json:"lseq"`   // its stream sequence, padded: the latest wins
}

// addLabel adds a label entry (at stream sequence seq) to b.
func (x *Index) addLabel(b *bleve.Batch, sessionID string, e *session.Entry, seq uint64) error {
	l, ok := e.Body.(*session.Label)
	if !ok || l.TargetID == "" || len(l.Label) > maxFacetBytes || !utf8.ValidString(l.Label) {
		return nil // nothing a filter could name
	}
	return b.Index(docID(sessionID, e.ID), labelDoc{Session: sessionID, Type: labelType, Label: l.Label,
		Target: docID(sessionID, l.TargetID), Seq: fmt.Sprintf("%020d", seq)})
}

// labelled are the documents of the entries whose label is label now.
func (x *Index) labelled(ctx context.Context, label string) ([]string, error) {
	typ := bleve.NewTermQuery(labelType)
	typ.SetField("type")
	named := bleve.NewTermQuery(label)
	named.SetField("label")
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(typ, named), maxLabelled, 0, false)
	req.Fields = []string{"target"}
	sr, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: label: %w", err)
	}
	if sr.Total > maxLabelled {
		return nil, &QueryError{"label", fmt.Sprintf("%.64q was given more than %d times: search without it, or with another", label, maxLabelled)}
	}
	if len(sr.Hits) == 0 {
		return nil, nil
	}
	// Every label entry of those entries: the latest says.
	var targets []query.Query
	for _, h := range sr.Hits {
		t, _ := h.Fields["target"].(string)
		q := bleve.NewTermQuery(t)
		q.SetField("target")
		targets = append(targets, q)
	}
	req = bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(typ, bleve.NewDisjunctionQuery(targets...)), maxLabelDocs, 0, false)
	req.Fields = []string{"target", "label", "lseq"}
	sr, err = x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: label: %w", err)
	}
	if sr.Total > maxLabelDocs {
		return nil, &QueryError{"label", fmt.Sprintf("%.64q is on entries labelled more than %d times in all: search without it", label, maxLabelDocs)}
	}
	type last struct{ seq, label string }
	latest := map[string]last{}
	for _, h := range sr.Hits {
		str := func(k string) string { s, _ := h.Fields[k].(string); return s }
		if l, ok := latest[str("target")]; !ok || str("lseq") > l.seq {
			latest[str("target")] = last{str("lseq"), str("label")}
		}
	}
	var ids []string
	for t, l := range latest {
		if l.label == label {
			ids = append(ids, t)
		}
	}
	return ids, nil
}
