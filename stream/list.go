package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

// Listing reads each partition's index bucket from its tail. The bucket
// keeps one record per session (history 1), so its stream holds the
// sessions in the order the server last indexed them, which is the order
// of a partition's listing: a page is the stream read backwards from
// where the last one stopped, and costs what it shows, however many
// sessions there are. A session's Updated is the server's time of that
// index write; partitions' pages are merged by it.
//
// A cursor is Updated|ID (session.CursorOf, which the service also
// builds). In the cursor session's partition, the page resumes below the
// session's record when it is still the one listed (the usual case); if
// the session was written or deleted since, and in the other partitions,
// below the cursor's time.

// maxScanned is session.MaxScanned, lowered by tests.
var maxScanned = session.MaxScanned

// listRequests bounds the direct gets a listing has in flight at once.
const listRequests = 1024

// listTime formats Updated: fixed width, so that strings sort as times.
const listTime = "2006-01-02T15:04:05.000000000Z"

// List implements session.Repo from the index: one record per session,
// never the entries. Each partition's page after the cursor is read from
// its bucket's tail and the pages are merged.
func (b *Backend) List(ctx context.Context, opts session.ListOptions) (session.ListPage, error) {
	limit, err := opts.PageLimit()
	if err != nil {
		return session.ListPage{}, err
	}
	if b.closed.Load() {
		return session.ListPage{}, fmt.Errorf("stream: list: %w", session.ErrClosed)
	}
	var after *listed
	if opts.Cursor != "" {
		if after, err = parseCursor(opts.Cursor); err != nil {
			return session.ListPage{}, err
		}
	}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	if err := opts.Filter.Validate(); err != nil {
		return session.ListPage{}, err
	}
	pages := make([]session.ListPage, len(b.parts))
	stops := make([]*listed, len(b.parts))
	var owner *Backend
	if after != nil {
		owner = b.partOf(after.id)
	}
	err = b.eachPart(func(i int, p *Backend) (err error) {
		pages[i], stops[i], err = p.listPart(ctx, limit, after, p == owner, opts.Filter)
		return err
	})
	if err != nil {
		return session.ListPage{}, err
	}
	if len(pages) == 1 {
		return pages[0], nil
	}
	// A partition that stopped reading for its budget (a filtered page)
	// knows nothing listed after where it stopped: the page ends at the
	// first such place in listing order, and the next starts there.
	var bound *listed
	for _, st := range stops {
		if st != nil && (bound == nil || st.before(*bound)) {
			bound = st
		}
	}
	// The page is the first limit of the partitions' pages, and more
	// follow if any partition has more or the union does.
	var all []session.Listing
	more := false
	for _, pg := range pages {
		for _, in := range pg.Sessions {
			if bound == nil || !bound.before(listedOf(in)) {
				all = append(all, in)
			}
		}
		more = more || pg.Next != ""
	}
	page, err := session.Page(all, session.ListOptions{Limit: limit})
	switch {
	case err != nil || page.Next != "":
	case bound != nil:
		page.Next = bound.cursor()
	case more && len(page.Sessions) > 0:
		page.Next = session.CursorOf(page.Sessions[len(page.Sessions)-1])
	}
	return page, err
}

// listedOf is where a listed session is in its listing.
func listedOf(in session.Listing) listed {
	at, _ := time.Parse(time.RFC3339Nano, in.Updated)
	return listed{at: at, id: in.ID}
}

// cursor is the cursor of a page ending at x.
func (x listed) cursor() string { return x.at.UTC().Format(listTime) + "|" + x.id }

// listed is a position in a listing: a record's index time and session.
type listed struct {
	at time.Time
	id string
}

// before reports whether x is listed before y (newer first, then by id).
func (x listed) before(y listed) bool {
	if !x.at.Equal(y.at) {
		return x.at.After(y.at)
	}
	return x.id < y.id
}

func parseCursor(c string) (*listed, error) {
	i := strings.LastIndexByte(c, '|')
	if i < 0 {
		return nil, fmt.Errorf("%w: cursor %q is not one a listing returned", session.ErrInvalidConfig, c)
	}
	at, err := time.Parse(time.RFC3339Nano, c[:i])
	if err != nil || session.ValidateSessionID(c[i+1:]) != nil {
		return nil, fmt.Errorf("%w: cursor %q is not one a listing returned", session.ErrInvalidConfig, c)
	}
	return &listed{at: at, id: c[i+1:]}, nil
}

// listPart is one partition's page after the cursor (from the start when
// after is nil); owner says the cursor's session lives here. With a
// filter it reads at most about session.MaxScanned records: stop is
// where it stopped short of the partition's end, if it did.
func (b *Backend) listPart(ctx context.Context, limit int, after *listed, owner bool, f *session.Filter) (_ session.ListPage, stop *listed, _ error) {
	// This process's own writes are listed: what its stores have not
	// indexed yet is written first, for at most an attempt's time (an
	// index out of reach fails the listing below anyway).
	fctx, cancel := context.WithTimeout(ctx, b.cfg.AttemptTimeout)
	_ = b.pendingIndex.flush(fctx)
	cancel()
	st, err := b.kv.Status(ctx)
	if err != nil {
		return session.ListPage{}, nil, fmt.Errorf("stream: list: %w", err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return session.ListPage{}, nil, fmt.Errorf("stream: list: index status of type %T", st)
	}
	first, last := bs.StreamInfo().State.FirstSeq, bs.StreamInfo().State.LastSeq
	r := tailReader{b: b, seen: map[string]bool{}}
	if !f.IsZero() {
		r.filter = f
	}
	hi := last
	if after != nil && hi >= first {
		exact := false
		if hi, exact, err = b.resumeAt(ctx, after, owner, hi); err != nil {
			return session.ListPage{}, nil, err
		}
		if !exact {
			r.after = after
		}
	}
	// Each window should hold what the page still needs at the density of
	// records seen so far. The tail is dense (records not yet replaced),
	// older stretches may be nearly empty (sessions written to since left
	// gaps), so a window starts at the page and grows, at most fourfold a
	// step, through gaps.
	density, prev := 1.0, uint64(0)
	var read, found uint64
	for hi >= first && hi > 0 && len(r.got) <= limit && r.examined < maxScanned {
		need := float64(limit + 1 - len(r.got))
		window := uint64(max(need/density*1.25, need))
		if prev > 0 {
			window = min(window, 4*prev)
		}
		lo := first
		if hi-first >= window {
			lo = hi - window + 1
		}
		n, err := r.read(ctx, lo, hi, hi == last, density >= sparse)
		if err != nil {
			return session.ListPage{}, nil, err
		}
		read, found, prev = read+hi-lo+1, found+uint64(n), hi-lo+1
		density = max(float64(found), 0.5) / float64(read)
		hi = lo - 1
	}
	page := session.ListPage{Sessions: r.got}
	switch {
	case len(r.got) > limit:
		page.Sessions = r.got[:limit:limit]
		page.Next = session.CursorOf(page.Sessions[limit-1])
	case hi >= first && hi > 0 && r.examined >= maxScanned:
		page.Next, stop = r.last.cursor(), &r.last
	}
	return page, stop, nil
}

// resumeAt is the index sequence a page after the cursor reads down
// from; exact means it is right below the cursor session's record, so
// every record from there on is listed after it.
func (b *Backend) resumeAt(ctx context.Context, after *listed, owner bool, last uint64) (hi uint64, exact bool, err error) {
	if owner {
		e, err := b.kv.Get(ctx, after.id)
		switch {
		case err == nil && e.Created().UTC().Format(listTime) == after.at.UTC().Format(listTime):
			return e.Revision() - 1, true, nil
		case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted):
			return 0, false, fmt.Errorf("stream: list: %w", err)
		}
	}
	seq, ok, err := b.indexSeqAt(ctx, after.at.Add(time.Nanosecond))
	if err != nil || !ok {
		return last, false, err
	}
	return min(seq-1, last), false, nil
}

// tailReader collects index records read window by window towards the
// start of the bucket's stream. With after set (a cursor placed by time),
// it keeps only records listed after it.
type tailReader struct {
	b      *Backend
	after  *listed
	filter *session.Filter   // nil: keep all
	seen   map[string]bool   // sessions whose latest record was read
	got    []session.Listing // newest first
	// With a filter: how many listed records were read, and the last.
	examined int
	last     listed
}

// sparse is the density of records under which a window is read by
// following the stream from one record to the next (a request per record,
// gaps skipped by the server) rather than asking for every sequence.
const sparse = 1.0 / 16

// read takes in the records of sequences lo..hi and returns how many it
// found: where records are dense, by a direct get of every sequence at
// once; where sparse, by asking for the next record from lo on, one after
// another. When top is set (hi is the stream's last sequence), the
// stream's leader answers: a replica behind it would hide the newest
// records, so a listing would miss a write made before it.
func (r *tailReader) read(ctx context.Context, lo, hi uint64, top, dense bool) (int, error) {
	var window []*jetstream.RawStreamMsg
	stream := r.b.cfg.indexStream()
	keep := func(m *jetstream.RawStreamMsg) error {
		window = append(window, m)
		return nil
	}
	var err error
	if dense {
		for from := lo; from <= hi && err == nil; from += listRequests {
			err = r.b.rq.GetSeqs(ctx, stream, from, min(hi, from+listRequests-1), top, keep)
		}
	} else {
		err = r.b.rq.GetEach(ctx, stream, lo, hi, top, keep)
	}
	if err != nil {
		return 0, fmt.Errorf("stream: list: %w", err)
	}
	// Newest first: a session's first record read is its latest (another
	// replica may still hold one it has since replaced).
	for i := len(window) - 1; i >= 0; i-- {
		r.take(window[i])
	}
	r.b.listReads.Add(uint64(len(window)))
	return len(window), nil
}

func (r *tailReader) take(m *jetstream.RawStreamMsg) {
	at, err := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return // not a stored message
	}
	id := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	if op := m.Header.Get("KV-Operation"); op != "" {
		return // deleted
	}
	var rec indexRecord
	if json.Unmarshal(m.Data, &rec) != nil || rec.ID != id {
		return // not ours: an index holds only sessionlog records
	}
	if rec.newer() {
		return // a later release's record: what it says is not known here
	}
	if r.after != nil && !r.after.before(listed{at: at, id: id}) {
		return
	}
	in := rec.Listing
	in.Updated = at.UTC().Format(listTime)
	if r.filter != nil {
		r.examined++
		r.last = listed{at: at, id: id}
		if !r.filter.Match(in) {
			return
		}
	}
	r.got = append(r.got, in)
}

// indexSeqAt is the sequence of the first index record written at or
// after t; ok is false when there is none. (One message, not a batch: see
// getSeqs.)
func (b *Backend) indexSeqAt(ctx context.Context, t time.Time) (seq uint64, ok bool, err error) {
	req := struct {
		StartTime time.Time `json:"start_time"`
		NextFor   string    `json:"next_by_subj"`
	}{t.UTC(), ">"}
	m, err := b.rq.GetOne(ctx, b.cfg.indexStream(), req, false)
	if err != nil {
		return 0, false, fmt.Errorf("stream: list: %w", err)
	}
	if m == nil {
		return 0, false, nil
	}
	return m.Sequence, true, nil
}

// SessionIDs returns the id of every session, from the index. Unlike
// List's pages (and a KV key listing), which read records and can miss
// one rewritten while they read, it asks the server for the index's
// subjects, one per session, as they are at that moment: what a backup
// enumerates. A session deleted since may be among them.
func (b *Backend) SessionIDs(ctx context.Context) ([]string, error) {
	var ids []string
	for _, p := range b.parts {
		s, err := p.js.Stream(ctx, p.cfg.indexStream())
		if err != nil {
			return nil, fmt.Errorf("stream: session ids: %w", err)
		}
		prefix := "$KV." + p.cfg.IndexBucket() + "."
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
		if err != nil {
			return nil, fmt.Errorf("stream: session ids: %w", err)
		}
		for subject := range info.State.Subjects {
			ids = append(ids, strings.TrimPrefix(subject, prefix))
		}
	}
	slices.Sort(ids)
	return ids, nil
}
