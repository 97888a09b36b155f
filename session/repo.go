package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Repo creates, opens, lists, deletes and forks sessions. Implementations:
// filestore.Repo (a directory of JSONL files) and stream.Repo (JetStream).
type Repo interface {
	// Create starts a session with header h (h.ID must be set and unused:
	// ErrSessionExists otherwise).
	Create(ctx context.Context, h Header) (Store, error)
	// Open opens an existing session, or returns ErrSessionNotFound.
	Open(ctx context.Context, id string) (Store, error)
	// List returns sessions most recently updated first, a page at a time.
	List(ctx context.Context, opts ListOptions) (ListPage, error)
	// Delete removes a session and everything in it.
	Delete(ctx context.Context, id string) error
	// Fork copies a branch of session from into a new session whose
	// header is h; h.ParentSession is set to locate the source (see
	// Header.ParentSession). Implementations use the function Fork.
	Fork(ctx context.Context, from string, p ForkPoint, h Header) (Store, ForkSelection, error)
}

// CopyCreator is a Repo that creates sessions for a bulk copy (an import,
// a restore): CreateForCopy's store takes appends in memory that does not
// grow with what it holds, and is closed, not read back (its reads see
// entries without their content: NewLeanTree).
type CopyCreator interface {
	CreateForCopy(ctx context.Context, h Header) (Store, error)
}

// Listing is one session in a listing.
type Listing struct {
	ID            string `json:"id"`
	Cwd           string `json:"cwd,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	Name          string `json:"name,omitempty"`
	Created       string `json:"created"`
	// Updated is when the session last changed, by which listings are
	// ordered: its last entry's timestamp where the store keeps no clock
	// of its own (memory, files), the server's time of its last index
	// write on JetStream.
	Updated string `json:"updated"`
	Entries int    `json:"entries"`
	Leaf    string `json:"leaf,omitempty"`
	// Labels are the session's labels in force, the MaxListedLabels most
	// recently set, distinct, in the order set.
	Labels []string `json:"labels,omitempty"`
	// Metadata is the header's metadata object (a RawMessage: written as
	// the JSON it is, by either JSON package).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// FirstMessage is the start of the first user message (Stats.
	// FirstUser): what a picker shows of a session without a name.
	FirstMessage string `json:"firstMessage,omitempty"`
	// Model is the last model the session used; Tokens and Cost its
	// usage in total (Stats.Usage).
	Model  string  `json:"model,omitempty"`
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
	// UnpricedTokens are the tokens of calls whose model has no price
	// (their cost is not in Cost), where a service with a usage index
	// fills Tokens and Cost as its usage report counts them.
	UnpricedTokens int64 `json:"unpricedTokens,omitempty"`
	// LastActivity is when the session last happened: its last entry's
	// timestamp (Updated, on JetStream, is when it was last written,
	// which for an imported session is the import).
	LastActivity string `json:"lastActivity,omitempty"`
}

// ListOptions pages a listing.
type ListOptions struct {
	// Limit is the page size (default DefaultPageSize, at most MaxPageSize).
	Limit int
	// Cursor is ListPage.Next of the previous page ("" for the first).
	Cursor string
	// Filter keeps only the sessions it matches. A filtered page may
	// hold fewer than Limit sessions, none even, and still have a Next:
	// a listing reads a bounded number of records per page (see
	// MaxScanned), and the caller follows Next until it is "".
	Filter *Filter
}

// MaxScanned bounds the listing records a filtered page reads, for
// repositories whose listing is not in memory.
const MaxScanned = 10000

// Page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// ListPage is one page of a listing.
type ListPage struct {
	Sessions []Listing
	// Next is the cursor of the following page, "" after the last.
	Next string
}

// PageLimit validates and defaults a page size.
func (o ListOptions) PageLimit() (int, error) {
	switch {
	case o.Limit == 0:
		return DefaultPageSize, nil
	case o.Limit < 0 || o.Limit > MaxPageSize:
		return 0, fmt.Errorf("%w: page size %d outside 1..%d", ErrInvalidConfig, o.Limit, MaxPageSize)
	}
	return o.Limit, nil
}

// Page sorts infos most recently updated first (ties by id) and cuts the
// page after cursor. Repos that hold their whole index use it.
func Page(infos []Listing, opts ListOptions) (ListPage, error) {
	limit, err := opts.PageLimit()
	if err != nil {
		return ListPage{}, err
	}
	if err := opts.Filter.Validate(); err != nil {
		return ListPage{}, err
	}
	if !opts.Filter.IsZero() {
		infos = slices.DeleteFunc(slices.Clone(infos), func(in Listing) bool { return !opts.Filter.Match(in) })
	}
	sortBy(infos)
	start := 0
	if opts.Cursor != "" {
		start = len(infos)
		for i, in := range infos {
			if after(in, opts.Cursor) {
				start = i
				break
			}
		}
	}
	end := min(start+limit, len(infos))
	page := ListPage{Sessions: append([]Listing(nil), infos[start:end]...)}
	if end < len(infos) {
		last := infos[end-1]
		page.Next = CursorOf(last)
	}
	return page, nil
}

// CursorOf is the cursor of a page that ends with in: the next page
// starts after it.
func CursorOf(in Listing) string { return in.Updated + "|" + in.ID }

func sortBy(infos []Listing) {
	slices.SortFunc(infos, func(a, b Listing) int {
		if a.Updated != b.Updated {
			if a.Updated > b.Updated {
				return -1
			}
			return 1
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
}

// after reports whether in sorts after the cursor "updated|id".
func after(in Listing, cursor string) bool {
	cu, cid, _ := cutLast(cursor, '|')
	if in.Updated != cu {
		return in.Updated < cu
	}
	return in.ID > cid
}

func cutLast(s string, sep byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Info summarises a tree for a listing; updated is the time of its last
// entry (or the header's when it has none).
func (t *Tree) Info() Listing {
	h := t.Header()
	in := Listing{ID: h.ID, Cwd: h.Cwd, ParentSession: h.ParentSession, Name: t.Name(),
		Created: h.Timestamp, Updated: h.Timestamp, Entries: t.Len(), Leaf: t.Leaf(),
		Labels: t.listed.List(), Metadata: json.RawMessage(h.Metadata),
		FirstMessage: t.stats.FirstUser, Model: t.stats.Model, Tokens: t.stats.Usage.Tokens(), Cost: t.stats.Usage.Cost.Total}
	last := ""
	if n := len(t.entries); n > 0 && t.entries[n-1] != nil {
		last = t.entries[n-1].Timestamp
	} else if t.skel != nil {
		last = t.skel.Updated
	}
	if last > in.Updated {
		in.Updated = last
	}
	in.LastActivity = in.Updated
	return in
}

// SelectForkOf picks the branch a fork of the session in src copies.
func SelectForkOf(ctx context.Context, src Store, p ForkPoint) (sel ForkSelection, err error) {
	err = withTree(ctx, src, func(t *Tree) error { sel, err = SelectFork(t, p); return err })
	return sel, err
}

// Fork is the one implementation of Repo.Fork. It selects the branch p
// names in src (which the caller closes), creates the new session h
// through create with parent as its ParentSession, and copies the branch
// into it; if the copy fails, the new session is removed again.
func Fork(ctx context.Context, src Store, p ForkPoint, h Header, parent string,
	create func(context.Context, Header) (Store, error), remove func(ctx context.Context, id string) error) (Store, ForkSelection, error) {
	sel, err := SelectForkOf(ctx, src, p)
	if err != nil {
		return nil, sel, err
	}
	h.ParentSession = parent
	dst, err := create(ctx, h)
	if err != nil {
		return nil, sel, err
	}
	if err := AppendAll(ctx, dst, sel.Entries); err != nil {
		// Leave no half-made fork behind.
		dst.Close(ctx)
		return nil, sel, errors.Join(err, remove(context.WithoutCancel(ctx), h.ID))
	}
	return dst, sel, nil
}

// BatchLimiter is implemented by BatchAppenders that take at most
// MaxBatch entries in one atomic batch.
type BatchLimiter interface {
	MaxBatch() int
}

// AppendAll appends entries in order: atomically when dst is a
// BatchAppender, in batches of its MaxBatch when it is a BatchLimiter.
func AppendAll(ctx context.Context, dst Store, entries []*Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if ba, ok := dst.(BatchAppender); ok {
		n := len(entries)
		if bl, ok := dst.(BatchLimiter); ok && bl.MaxBatch() > 0 {
			n = bl.MaxBatch()
		}
		for len(entries) > 0 {
			k := min(n, len(entries))
			if err := ba.AppendBatch(ctx, entries[:k]); err != nil {
				return err
			}
			entries = entries[k:]
		}
		return nil
	}
	for _, e := range entries {
		if err := dst.Append(ctx, e); err != nil {
			return err
		}
	}
	return nil
}
