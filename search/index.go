// Package search is full-text search over message text across one
// deployment's (one tenant's) sessions: a bleve index kept current from
// the stream by an Indexer on each node (see Follow), rebuilt from the
// stream when it is missing, and queried with Index.Search.
//
// What is indexed, per entry: the text blocks of user, assistant and tool
// result messages, custom messages' text, and compaction and branch
// summaries, at most Config.MaxTextBytes of each. Thinking, tool-call
// arguments, images and content stored apart (blobs) are not.
package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/usage"
)

var (
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("search: invalid config")
	// ErrInvalidQuery is returned by Search for a query it will not run;
	// a *QueryError says which part and why.
	ErrInvalidQuery = errors.New("search: invalid query")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("search: index closed")
)

// QueryError says what is wrong with a query.
type QueryError struct {
	Field  string // "query", "limit", "offset", "session"
	Reason string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrInvalidQuery, e.Field, e.Reason)
}

func (e *QueryError) Unwrap() error { return ErrInvalidQuery }

// Config configures an index.
type Config struct {
	// Dir holds the index; "" keeps it in memory only (deployments that
	// encrypt their data at rest: an index on disk would hold its text in
	// the clear). A missing or unreadable index is rebuilt from the
	// stream.
	Dir string
	// MaxTextBytes bounds the text indexed of one entry.
	MaxTextBytes int
	// MaxQueryBytes and MaxQueryTerms bound a query; MaxResults bounds
	// offset+limit.
	MaxQueryBytes, MaxQueryTerms, MaxResults int
	// Batch is how many entries an indexer writes at once, BatchBytes
	// how many bytes of their text at most (0: DefaultBatchBytes; a fork
	// or an import writes a thousand entries of 32 KB of text faster than
	// one is read, and the index held them all with what it made of
	// them); FlushEvery how long one waits for more before writing fewer.
	Batch      int
	BatchBytes int
	FlushEvery time.Duration
	// SliceEntries is the size of a slice, ExactUpTo the most entries a
	// query's rarest word may be in for its hits to be ranked across the
	// index rather than newest slice first (see rank.go).
	SliceEntries, ExactUpTo int
	// Prices prices the usage of model calls (nil: usage.Default()).
	// Costs are worked out as entries are indexed: an index priced by
	// another table is rebuilt.
	Prices *usage.Table
}

// DefaultConfig keeps the index in dir.
func DefaultConfig(dir string) Config {
	return Config{Dir: dir, MaxTextBytes: 32 << 10, MaxQueryBytes: 1024, MaxQueryTerms: 32, MaxResults: 1000,
		Batch: 1000, BatchBytes: DefaultBatchBytes, FlushEvery: 50 * time.Millisecond, SliceEntries: 32 << 10, ExactUpTo: 5000}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.MaxTextBytes < 1:
		return fmt.Errorf("%w: MaxTextBytes must be positive", ErrInvalidConfig)
	case c.MaxQueryBytes < 1 || c.MaxQueryTerms < 1 || c.MaxResults < 1:
		return fmt.Errorf("%w: MaxQueryBytes, MaxQueryTerms and MaxResults must be positive", ErrInvalidConfig)
	case c.Batch < 1 || c.FlushEvery <= 0:
		return fmt.Errorf("%w: Batch and FlushEvery must be positive", ErrInvalidConfig)
	case c.SliceEntries < 1 || c.ExactUpTo < 0:
		return fmt.Errorf("%w: SliceEntries must be positive, ExactUpTo not negative", ErrInvalidConfig)
	}
	return nil
}

// Index is a search index. It is safe for concurrent use.
type Index struct {
	cfg    Config
	idx    bleve.Index
	usages *usageTable
	prices *usage.Table
	taken  atomic.Uint64 // entries indexed, ever: their slices

	mu     sync.RWMutex // closed
	closed bool
}

// doc is what the index holds of one entry.
type doc struct {
	Session   string    `json:"session"`
	Entry     string    `json:"entry"`
	Type      string    `json:"type"`
	Role      string    `json:"role"`
	Timestamp string    `json:"ts"`
	Text      string    `json:"text"`
	Tools     []string  `json:"tools,omitempty"`
	Paths     []string  `json:"paths,omitempty"`
	Model     string    `json:"model,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Cwd       []string  `json:"cwd,omitempty"`
	Time      time.Time `json:"time,omitzero"`
	Slice     string    `json:"slice"`
}

// schemaKey records, in the index, the version of what it holds of an
// entry: an index of another is set aside and rebuilt from the stream.
// DefaultBatchBytes is Config.BatchBytes's default.
const DefaultBatchBytes = 4 << 20

var schemaKey = []byte("sessionlog.schema")

// schema is the version of doc and its mapping (2: the facets; 3: the
// usage documents; 4: the slices; 5: usage documents' ids apart from
// entries'; 6: usage read by package usage, each call once, priced). The price table's fingerprint follows
// it.
const schema = "6"

// docID names an entry's document: session ids hold no '/'.
func docID(sessionID, entryID string) string { return sessionID + "/" + entryID }

func indexMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	dm := bleve.NewDocumentStaticMapping()
	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll, f.DocValues = true, false, false
		return f
	}
	dm.AddFieldMappingsAt("session", kw())
	dm.AddFieldMappingsAt("entry", kw())
	dm.AddFieldMappingsAt("type", kw())
	dm.AddFieldMappingsAt("role", kw())
	dm.AddFieldMappingsAt("ts", kw())
	for _, f := range []string{"label", "target", "lseq"} { // a label entry's
		dm.AddFieldMappingsAt(f, kw())
	}
	for _, f := range []string{"tools", "paths", "model", "agent", "cwd", "slice"} {
		facet := bleve.NewKeywordFieldMapping()
		facet.Store, facet.IncludeInAll, facet.DocValues = false, false, false
		dm.AddFieldMappingsAt(f, facet)
	}
	t := bleve.NewDateTimeFieldMapping()
	t.Store, t.IncludeInAll, t.DocValues = false, false, false
	dm.AddFieldMappingsAt("time", t)
	usage := bleve.NewTextFieldMapping()
	usage.Index, usage.Store, usage.IncludeInAll, usage.DocValues = false, true, false, false
	dm.AddFieldMappingsAt("usage", usage)
	text := bleve.NewTextFieldMapping()
	text.Analyzer = "standard" // lower-cased Unicode words, no stemming: exact words
	text.Store, text.IncludeTermVectors, text.IncludeInAll = true, true, false
	dm.AddFieldMappingsAt("text", text)
	m.DefaultMapping = dm
	m.DefaultAnalyzer = "standard"
	return m
}

// Open opens the index in cfg.Dir, creating it when missing. An index
// that cannot be opened (damaged, or of another version) is set aside
// (renamed with a .broken suffix) and a new one made: the stream rebuilds
// it. rebuilt says the index starts empty.
func Open(cfg Config) (x *Index, rebuilt bool, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, false, err
	}
	var idx bleve.Index
	if cfg.Dir == "" {
		idx, err = bleve.NewMemOnly(indexMapping())
		rebuilt = true
	} else {
		if err := os.MkdirAll(filepath.Dir(cfg.Dir), 0o700); err != nil {
			return nil, false, fmt.Errorf("search: %w", err)
		}
		idx, err = bleve.OpenUsing(cfg.Dir, map[string]any{"bolt_timeout": "2s"})
		switch {
		case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
			idx, err = bleve.New(cfg.Dir, indexMapping())
			rebuilt = true
		case err != nil && strings.Contains(err.Error(), "timeout"):
			return nil, false, fmt.Errorf("search: index %s is in use by another process", cfg.Dir)
		case err != nil:
			aside := fmt.Sprintf("%s.broken-%d", cfg.Dir, time.Now().UnixNano())
			if rerr := os.Rename(cfg.Dir, aside); rerr != nil {
				return nil, false, fmt.Errorf("search: index %s cannot be opened (%v) nor set aside: %w", cfg.Dir, err, rerr)
			}
			idx, err = bleve.New(cfg.Dir, indexMapping())
			rebuilt = true
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("search: %w", err)
	}
	if cfg.Prices == nil {
		cfg.Prices = usage.Default()
	}
	// The price table's fingerprint, hashed: every release names a set
	// aside index after this record, so it stays a file name's part
	// (v0.4.0 would fail to roll back on a '/').
	version := fmt.Sprintf("%s-%016x", schema, fnv64a(cfg.Prices.Fingerprint()))
	if v, gerr := idx.GetInternal(schemaKey); !rebuilt && (gerr != nil || string(v) != version) {
		// Made by another version: what it holds of an entry is not
		// what this one searches.
		idx.Close()
		aside := fmt.Sprintf("%s.schema%s-%d", cfg.Dir, fileSafe(string(v)), time.Now().UnixNano())
		if rerr := os.Rename(cfg.Dir, aside); rerr != nil {
			return nil, false, fmt.Errorf("search: index %s is of another version and cannot be set aside: %w", cfg.Dir, rerr)
		}
		if idx, err = bleve.New(cfg.Dir, indexMapping()); err != nil {
			return nil, false, fmt.Errorf("search: %w", err)
		}
		rebuilt = true
	}
	if rebuilt {
		if err := idx.SetInternal(schemaKey, []byte(version)); err != nil {
			idx.Close()
			return nil, false, fmt.Errorf("search: %w", err)
		}
	}
	x = &Index{cfg: cfg, idx: idx, usages: newUsageTable(), prices: cfg.Prices}
	if v, err := idx.GetInternal(sliceKey); err == nil && len(v) == 8 {
		x.taken.Store(binary.BigEndian.Uint64(v))
	}
	if !rebuilt {
		if err := x.loadUsage(context.Background()); err != nil {
			idx.Close()
			return nil, false, err
		}
	}
	return x, rebuilt, nil
}

// Close closes the index. It is idempotent.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	return x.idx.Close()
}

// read runs fn unless the index is closed.
func (x *Index) read(fn func() error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return ErrClosed
	}
	return fn()
}

// Count is the number of entries indexed.
func (x *Index) Count() (n uint64, err error) {
	err = x.read(func() (err error) { n, err = x.idx.DocCount(); return err })
	return n - min(n, uint64(x.usageSessions())), err
}

// textOf is the text indexed of an entry ("" for none), at most max bytes.
func textOf(e *session.Entry, max int) (role, text string) {
	var b strings.Builder
	add := func(s string) {
		if s == "" || b.Len() >= max {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	switch e.Type {
	case session.TypeMessage:
		if e.Message == nil {
			return "", ""
		}
		role = e.Message.Role
		switch role {
		case session.RoleUser, session.RoleAssistant, session.RoleToolResult:
			for _, bl := range e.Message.Content.Blocks {
				if bl.Type == session.BlockText {
					add(bl.Text)
				}
			}
		}
	case session.TypeCustomMessage:
		for _, bl := range e.CustomMessage().Content.Blocks {
			if bl.Type == session.BlockText {
				add(bl.Text)
			}
		}
	case session.TypeCompaction, session.TypeBranchSummary:
		add(e.Summary())
	case session.TypeCustom:
		// An Agents SDK session's items are its messages.
		if c, ok := e.Body.(*session.Custom); ok {
			if kind, text, ok := outline.ItemText(c); ok {
				role = kind
				add(text)
			}
		}
	}
	return role, truncate(b.String(), max)
}

// truncate cuts s to at most max bytes, at a rune boundary.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// indexedTypes are the entry types whose text is indexed.
var indexedTypes = []session.EntryType{session.TypeMessage, session.TypeCustomMessage, session.TypeCompaction, session.TypeBranchSummary, session.TypeCustom}

// add puts an entry of session (whose header gave facts) into batch b,
// if it has text.
func (x *Index) add(b *bleve.Batch, sessionID string, e *session.Entry, facts SessionFacts) error {
	role, text := textOf(e, x.cfg.MaxTextBytes)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	f := facetsOf(e, facts)
	return b.Index(docID(sessionID, e.ID), doc{Session: sessionID, Entry: e.ID, Type: string(e.Type), Role: role, Timestamp: e.Timestamp, Text: text,
		Tools: f.Tools, Paths: f.Paths, Model: f.Model, Agent: f.Agent, Cwd: f.Cwd, Time: f.Time, Slice: x.nextSlice()})
}

// Forget removes every entry of session from the index (it was deleted).
func (x *Index) Forget(ctx context.Context, sessionID string) error {
	x.forgetUsage(sessionID)
	return x.read(func() error {
		for {
			q := bleve.NewTermQuery(sessionID)
			q.SetField("session")
			req := bleve.NewSearchRequestOptions(q, 1000, 0, false)
			res, err := x.idx.SearchInContext(ctx, req)
			if err != nil {
				return fmt.Errorf("search: forget %s: %w", sessionID, err)
			}
			if len(res.Hits) == 0 {
				return nil
			}
			b := x.idx.NewBatch()
			for _, h := range res.Hits {
				b.Delete(h.ID)
			}
			if err := x.idx.Batch(b); err != nil {
				return fmt.Errorf("search: forget %s: %w", sessionID, err)
			}
		}
	})
}

// TextQuery is the bleve query of a search's text, unchecked (Search
// checks it first; the bench runs it on bleve alone as its baseline):
// every word in the text field, any case; a part in double quotes is a
// phrase; a word ending in * is a prefix (of at least minAffix letters),
// one ending in ~ matches words a letter or two away (typos).
func TextQuery(text string) query.Query {
	var parts []query.Query
	for i, seg := range strings.Split(text, `"`) {
		if i%2 == 1 { // inside quotes
			if strings.TrimSpace(seg) != "" {
				p := bleve.NewMatchPhraseQuery(seg)
				p.SetField("text")
				parts = append(parts, p)
			}
			continue
		}
		var plain []string
		for _, w := range strings.Fields(seg) {
			switch stem := strings.ToLower(strings.TrimRight(w, "*~")); {
			case strings.HasSuffix(w, "*") && utf8.RuneCountInString(stem) >= minAffix:
				p := bleve.NewPrefixQuery(stem)
				p.SetField("text")
				parts = append(parts, p)
			case strings.HasSuffix(w, "~") && utf8.RuneCountInString(stem) >= minAffix:
				f := bleve.NewFuzzyQuery(stem)
				f.SetField("text")
				f.SetFuzziness(1)
				if utf8.RuneCountInString(stem) >= 6 {
					f.SetFuzziness(2)
				}
				parts = append(parts, f)
			default:
				plain = append(plain, w)
			}
		}
		if len(plain) > 0 {
			m := bleve.NewMatchQuery(strings.Join(plain, " "))
			m.SetField("text")
			m.SetOperator(query.MatchQueryOperatorAnd)
			parts = append(parts, m)
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return bleve.NewConjunctionQuery(parts...)
}

// minAffix is the shortest stem of a prefix or a typo-tolerant word: a
// shorter one would match most of the index's words.
const minAffix = 3

// compile turns a query's text into a bleve query: every word must
// appear (any case); a text in double quotes is a phrase.
func (x *Index) compile(q Query) (query.Query, error) {
	text := strings.TrimSpace(q.Text)
	switch {
	case text == "":
		return nil, &QueryError{"query", "is empty"}
	case len(text) > x.cfg.MaxQueryBytes:
		return nil, &QueryError{"query", fmt.Sprintf("is %d bytes (max %d)", len(text), x.cfg.MaxQueryBytes)}
	case !utf8.ValidString(text):
		return nil, &QueryError{"query", "is not valid UTF-8"}
	case len(strings.Fields(text)) > x.cfg.MaxQueryTerms:
		return nil, &QueryError{"query", fmt.Sprintf("has %d words (max %d)", len(strings.Fields(text)), x.cfg.MaxQueryTerms)}
	}
	if strings.Count(text, `"`)%2 == 1 {
		// A quote without its pair quotes nothing: its words are words.
		i := strings.LastIndex(text, `"`)
		text = text[:i] + " " + text[i+1:]
	}
	for _, w := range strings.Fields(strings.ReplaceAll(text, `"`, " ")) {
		if stem := strings.TrimRight(w, "*~"); stem != w && utf8.RuneCountInString(stem) < minAffix {
			return nil, &QueryError{"query", fmt.Sprintf("%.40q: a prefix (*) or a typo-tolerant word (~) needs %d letters or more", w, minAffix)}
		}
	}
	fq, err := q.Filter.queries()
	if err != nil {
		return nil, err
	}
	tq := TextQuery(text)
	if len(fq) > 0 {
		tq = bleve.NewConjunctionQuery(append([]query.Query{tq}, fq...)...)
	}
	if q.Session == "" {
		if q.Scope != nil {
			return nil, &QueryError{"session", "is required to search some of its entries"}
		}
		return tq, nil
	}
	if err := session.ValidateSessionID(q.Session); err != nil {
		return nil, &QueryError{"session", err.Error()}
	}
	s := bleve.NewTermQuery(q.Session)
	s.SetField("session")
	if q.Scope == nil {
		return bleve.NewConjunctionQuery(tq, s), nil
	}
	ids := make([]string, len(q.Scope.Entries))
	for i, e := range q.Scope.Entries {
		ids[i] = docID(q.Session, e)
	}
	return bleve.NewConjunctionQuery(tq, s, bleve.NewDocIDQuery(ids)), nil
}

func fnv64a(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// fileSafe is s with what a file name may not hold (another version's
// record is read as it is) replaced, at most 64 bytes of it.
func fileSafe(s string) string {
	b := []byte(s[:min(len(s), 64)])
	for i, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '.' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
