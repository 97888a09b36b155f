package search

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/usage"
)

// Usage across sessions is kept by the indexer as entries pass, beside
// the text: per session, what its model calls consumed by day and model
// (a cell). The cells of the sessions a batch touched are written as one
// document per session ("usage" documents, no text: no search finds
// them) in the batch that indexes the entries and records the stream's
// position, so a crash repeats nothing and loses nothing; they are read
// back when the index opens. A report (Index.Usage) sums the cells in
// memory: no session is read per request.

// usageCell sums the model calls of one session on one day by one model.
type usageCell struct {
	Day   string `json:"day"`
	Model string `json:"model,omitempty"`
	api.UsageSums
}

type cellKey struct{ day, model string }

// sessionUsage is one session's cells and the facts of its header they
// are grouped by.
type sessionUsage struct {
	Agent string      `json:"agent,omitempty"`
	Cwd   string      `json:"cwd,omitempty"`
	Cells []usageCell `json:"cells"` // in place: a report reads them all, in order
	// Reader and Recent are where the reading of its entries stands: a
	// Codex rollout's model and totals, the last API messages counted.
	Reader usage.ReaderState `json:"reader,omitzero"`
	Recent []usage.Call      `json:"recent,omitempty"`
	index  map[cellKey]int
	total  api.UsageSums // of every cell: what a report by session alone reads
	// reader and ledger read a batch's entries (a staged copy's alone).
	reader *usage.Reader
	ledger *usage.Ledger
}

// keepReading records where the reading stands, to be written.
func (su *sessionUsage) keepReading() {
	if su.reader != nil {
		su.Reader, su.Recent = su.reader.State(), su.ledger.Remembered()
	}
}

// maxCells bounds one session's cells: past it, new days and models are
// summed in one cell of no day and no model (the totals stay right).
const maxCells = 1024

// overflowModel names the model of the cell that sums what is past
// maxCells.
const overflowModel = "(more days and models than one session keeps)"

func (su *sessionUsage) clone() *sessionUsage {
	su.keepReading()
	return &sessionUsage{Agent: su.Agent, Cwd: su.Cwd, Cells: slices.Clone(su.Cells), index: maps.Clone(su.index), total: su.total,
		Reader: su.Reader, Recent: slices.Clone(su.Recent)}
}

// reindex builds the index of cells read back.
func (su *sessionUsage) reindex() {
	su.index = make(map[cellKey]int, len(su.Cells))
	for i, c := range su.Cells {
		su.index[cellKey{c.Day, c.Model}] = i
		su.total.Add(c.UsageSums)
	}
}

func (su *sessionUsage) cell(day, model string) *usageCell {
	k := cellKey{day, model}
	if i, ok := su.index[k]; ok {
		return &su.Cells[i]
	}
	if len(su.Cells) >= maxCells {
		k = cellKey{"", overflowModel}
		if i, ok := su.index[k]; ok {
			return &su.Cells[i]
		}
	}
	su.Cells, su.index[k] = append(su.Cells, usageCell{Day: k.day, Model: k.model}), len(su.Cells)
	return &su.Cells[len(su.Cells)-1]
}

// usageTable is every session's usage, as committed to the index.
type usageTable struct {
	mu       sync.RWMutex
	sessions map[string]*sessionUsage
	// forgotten are sessions deleted lately: a batch staged before their
	// deletion and written after it must not bring them back.
	forgotten *lru.Cache[string, struct{}]
}

// maxForgotten bounds the deleted sessions a table remembers.
const maxForgotten = 1 << 14

func newUsageTable() *usageTable {
	return &usageTable{sessions: map[string]*sessionUsage{}, forgotten: lru.New[string, struct{}]()}
}

// usageStage is what a batch adds to the usage of the sessions it
// touches: copies, made current in the table once the batch is written.
type usageStage map[string]*sessionUsage

// usageDocID names a session's usage document. An entry's document's id
// starts with its session's id, which never holds a '/': this one starts
// with one, so no entry's id (which may hold anything) can take its place.
func usageDocID(sessionID string) string { return "/usage/" + sessionID }

// usageDoc is what the index holds of a session's usage.
type usageDoc struct {
	Session string `json:"session"`
	Type    string `json:"type"`
	Usage   string `json:"usage"`
}

const usageType = "usage"

// usageWindow is how many API messages a session's usage remembers to
// count their repeated lines once: Claude Code writes the lines of one
// message together, so a repeat is of one of the last few.
const usageWindow = 8

// stageUsage adds what e consumed to its session's usage in st: each
// model call once (a repeat of one counted already replaces it when
// larger, as usage.Ledger says), priced by the index's table. A fork's
// copy of its parent's entry (stamped no later than the fork was made)
// adds nothing: the parent counts it.
func (x *Index) stageUsage(st usageStage, sessionID string, e *session.Entry, facts SessionFacts) {
	if !facts.Forked.IsZero() {
		if at, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil && !at.After(facts.Forked) {
			return
		}
	}
	su := st[sessionID]
	if su == nil {
		x.usages.mu.RLock()
		_, gone := x.usages.forgotten.Peek(sessionID)
		if cur := x.usages.sessions[sessionID]; cur != nil {
			su = cur.clone()
		}
		x.usages.mu.RUnlock()
		if gone {
			return
		}
		if su == nil {
			su = &sessionUsage{index: map[cellKey]int{}}
		}
		st[sessionID] = su
	}
	if su.reader == nil {
		su.reader, su.ledger = &usage.Reader{}, &usage.Ledger{Window: usageWindow}
		su.reader.Resume(su.Reader)
		su.ledger.Restore(su.Recent)
	}
	calls := su.reader.Calls(e)
	if len(calls) == 0 {
		return
	}
	if facts.Agent != "" || facts.Cwd != "" {
		su.Agent, su.Cwd = facts.Agent, facts.Cwd
	}
	for _, c := range calls {
		counted, old, replaced := su.ledger.Add(c)
		if replaced {
			sums := x.prices.Sums(old)
			su.cell(usageDay(old), modelName(old)).Sub(sums)
			su.total.Sub(sums)
		}
		if counted {
			sums := x.prices.Sums(c)
			su.cell(usageDay(c), modelName(c)).Add(sums)
			su.total.Add(sums)
		}
	}
}

// usageDay is the UTC day a call was made ("" when unknown).
func usageDay(c usage.Call) string {
	if c.At.IsZero() {
		return ""
	}
	return c.At.UTC().Format(time.DateOnly)
}

// modelName is a call's provider/model as a cell names it.
func modelName(c usage.Call) string {
	name := c.Name()
	if len(name) > maxFacetBytes || !utf8.ValidString(name) {
		return "(invalid model name)"
	}
	return name
}

// writeUsage adds st's sessions' usage documents to b.
func writeUsage(b *bleve.Batch, st usageStage) error {
	for id, su := range st {
		su.keepReading()
		data, err := json.Marshal(su)
		if err != nil {
			return fmt.Errorf("search: usage of %s: %w", id, err)
		}
		if err := b.Index(usageDocID(id), usageDoc{Session: id, Type: usageType, Usage: string(data)}); err != nil {
			return fmt.Errorf("search: usage of %s: %w", id, err)
		}
	}
	return nil
}

// commitUsage makes st current, once its batch is written; a session
// deleted meanwhile is dropped again.
func (x *Index) commitUsage(st usageStage) {
	var gone []string
	x.usages.mu.Lock()
	for id, su := range st {
		if _, ok := x.usages.forgotten.Peek(id); ok {
			gone = append(gone, id)
			continue
		}
		x.usages.sessions[id] = su
	}
	x.usages.mu.Unlock()
	for _, id := range gone {
		_ = x.read(func() error { return x.idx.Delete(usageDocID(id)) })
	}
}

// forgetUsage drops a deleted session's usage (its document goes with its
// entries').
func (x *Index) forgetUsage(sessionID string) {
	x.usages.mu.Lock()
	defer x.usages.mu.Unlock()
	delete(x.usages.sessions, sessionID)
	x.usages.forgotten.Put(sessionID, struct{}{})
	if x.usages.forgotten.Len() > maxForgotten {
		x.usages.forgotten.Trim(maxForgotten*7/8, nil)
	}
}

// reviveUsage lets a session made again under a deleted one's id count.
func (x *Index) reviveUsage(sessionID string) {
	x.usages.mu.Lock()
	defer x.usages.mu.Unlock()
	x.usages.forgotten.Remove(sessionID)
}

// loadUsage reads every session's usage document into the table, in
// pages ordered by id.
func (x *Index) loadUsage(ctx context.Context) error {
	q := bleve.NewTermQuery(usageType)
	q.SetField("type")
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(query.Query(q), 1000, 0, false)
		req.SortBy([]string{"_id"})
		req.Fields = []string{"session", "usage"}
		if after != nil {
			req.SearchAfter = after
		}
		res, err := x.idx.SearchInContext(ctx, req)
		if err != nil {
			return fmt.Errorf("search: read usage: %w", err)
		}
		for _, h := range res.Hits {
			id, _ := h.Fields["session"].(string)
			data, _ := h.Fields["usage"].(string)
			var su sessionUsage
			if err := json.Unmarshal([]byte(data), &su); err != nil || id == "" {
				return fmt.Errorf("search: usage document %q is damaged: %v", h.ID, err)
			}
			su.reindex()
			x.usages.sessions[id] = &su
		}
		if len(res.Hits) < req.Size {
			return nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// usageSessions is how many sessions have usage documents.
func (x *Index) usageSessions() int {
	x.usages.mu.RLock()
	defer x.usages.mu.RUnlock()
	return len(x.usages.sessions)
}

// underDir tells whether cwd is dir or below it.
func underDir(cwd, dir string) bool {
	dir = strings.TrimRight(dir, `/\`)
	if dir == "" {
		return strings.HasPrefix(cwd, "/") || strings.HasPrefix(cwd, `\`)
	}
	return cwd == dir || (strings.HasPrefix(cwd, dir) && strings.ContainsRune(`/\`, rune(cwd[len(dir)])))
}
