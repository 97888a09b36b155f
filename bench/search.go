package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// searchQueries is how many queries the search latency is taken over.
const searchQueries = 300

// vocabulary is the words the bench's messages are made of: pseudo-words,
// drawn with a skew (a few common, most rare), as a language's are.
func vocabulary(n int) []string {
	syl := []string{"ka", "lo", "mi", "ren", "to", "sa", "vi", "dor", "pe", "nu", "qua", "zel", "fi", "gor", "ha", "jin"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k, x := 0, i+1; k < 3 || x > 0; k++ {
			b.WriteString(syl[x%len(syl)])
			x /= len(syl)
		}
		out[i] = b.String()
	}
	return out
}

// searchPart measures full-text search over many sessions: the index
// built from the stream (entries a second), query latency against the
// same queries run on the bleve index alone (no snippets, no stored
// fields, no check that sessions still exist), and how long after being
// stored an entry is searchable against how long after being stored a
// plain consumer of the stream receives it.
func searchPart(ctx context.Context, cfg Config, n *node, dir string, r *Report, p progress) error {
	sessions, per := cfg.SearchSessions, cfg.SearchEntries
	b, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	words := vocabulary(20000)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, uint64(len(words)-1)) // the queries'
	// text draws from the writer's own rng: writers run at once, and a
	// rand.Rand is not safe for that.
	text := func(rng *rand.Rand) string {
		z := rand.NewZipf(rng, 1.1, 1, uint64(len(words)-1))
		k := 8 + rng.IntN(24)
		var s []string
		for range k {
			s = append(s, words[int(z.Uint64())%len(words)])
		}
		return strings.Join(s, " ")
	}
	p.say("search: writing %d sessions of %d messages", sessions, per)
	var written atomic.Int64 // entries: a Claude Code reply is two
	err = createHeaders(ctx, b, 0, sessions, usageHeader, func(st *stream.Store, i int) error {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		var batch []*session.Entry
		parent := ""
		day := usageEpoch.Add(time.Duration(rng.IntN(usageDays)) * 24 * time.Hour)
		for k := range per {
			// Users ask, models answer (with usage), over a day or two.
			m := session.Message{Role: session.RoleUser, Content: session.TextContent(text(rng)), Timestamp: 1735689600000}
			at := day.Add(time.Duration(k) * 20 * time.Minute)
			if k%2 == 1 {
				m.Role, m.Body = session.RoleAssistant, usageReply(rng, i)
			}
			e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", k+1), ParentID: parent, Timestamp: session.FormatTime(at), Message: &m}
			if k%2 == 1 && usageAgents[i%len(usageAgents)] == "claude-code" {
				// Claude Code's way: the message's lines each repeat its
				// usage (the first with a partial output count), and no
				// cost is recorded: the index counts it once, priced.
				first, last := claudeLines(e, k)
				e.Extra = append(e.Extra, session.Field{Key: "claudeCode", Value: first})
				again := *e
				again.ID, again.ParentID, again.Extra = e.ID+"b", e.ID, []session.Field{{Key: "claudeCode", Value: last}}
				batch, e = append(batch, e), &again
			}
			batch, parent = append(batch, e), e.ID
			if len(batch) >= 100 {
				if err := st.AppendBatch(ctx, batch); err != nil {
					return err
				}
				written.Add(int64(len(batch)))
				batch = batch[:0]
			}
		}
		written.Add(int64(len(batch)))
		if len(batch) > 0 {
			return st.AppendBatch(ctx, batch)
		}
		return nil
	})
	if err != nil {
		return err
	}
	indexDir := filepath.Join(dir, "search-index")
	x, _, err := search.Open(search.DefaultConfig(indexDir))
	if err != nil {
		return err
	}
	defer x.Close()
	total := int(written.Load())
	p.say("search: indexing %d entries from the stream", total)
	start := time.Now()
	ix, err := search.Follow(ctx, x, b)
	if err != nil {
		return err
	}
	defer ix.Close(context.WithoutCancel(ctx))
	if err := ix.CaughtUp(ctx); err != nil {
		return err
	}
	built := time.Since(start)
	group := fmt.Sprintf("Search over %d sessions, %d messages (index on disk)", sessions, sessions*per)
	size, _ := dirSize(indexDir)
	r.note("search: the index of %d entries was built from the stream in %.1f s (%.0f entries/s); %.0f MB on disk", total, built.Seconds(), float64(total)/built.Seconds(), size/1e6)

	// Queries: one common word, one rare word, two words, a phrase.
	qrng := rand.New(rand.NewPCG(3, 4))
	queries := make([]string, searchQueries)
	for i := range queries {
		w := func() string { return words[int(zipf.Uint64())%len(words)] }
		switch i % 4 {
		case 0:
			queries[i] = words[qrng.IntN(20)]
		case 1:
			queries[i] = words[100+qrng.IntN(5000)]
		case 2:
			queries[i] = w() + " " + w()
		default:
			t := strings.Fields(text(qrng))
			queries[i] = `"` + t[0] + " " + t[1] + `"`
		}
	}
	timed := func(f search.Filter) (latencies, error) {
		out := make(latencies, 0, len(queries))
		for _, q := range queries {
			t0 := time.Now()
			if _, err := x.Search(ctx, search.Query{Text: q, Filter: f}, b.Exists); err != nil {
				return nil, err
			}
			out = append(out, time.Since(t0))
		}
		return out, nil
	}
	ours, err := timed(search.Filter{})
	if err != nil {
		return err
	}
	// The filters people use, on the same queries.
	for _, f := range []struct {
		name string
		f    search.Filter
	}{
		{"role assistant", search.Filter{Role: "assistant"}},
		{"model p/gpt-5", search.Filter{Model: "p/gpt-5"}},
		{"agent codex", search.Filter{Agent: "codex"}},
		{"cwd of one project", search.Filter{Cwd: "/home/dev/project-07"}},
		{"a month", search.Filter{Since: usageEpoch.AddDate(0, 1, 0), Until: usageEpoch.AddDate(0, 2, 0)}},
	} {
		lat, err := timed(f.f)
		if err != nil {
			return err
		}
		r.add(Row{Group: group, Name: "search p99, filtered: " + f.name, Ours: millis(lat.pct(99)), Base: millis(latencies(ours).pct(99)), Unit: "ms", BaseName: "ours, the same queries unfiltered"})
	}
	if err := usageReports(ctx, x, b, group, r, p); err != nil {
		return err
	}
	// The baseline reads the same index with bleve alone, once ours is
	// closed (an index on disk has one owner).
	ix.Close(ctx)
	x.Close()
	raw, err := bleve.Open(indexDir)
	if err != nil {
		return err
	}
	base := make([]time.Duration, 0, len(queries))
	for _, q := range queries {
		t0 := time.Now()
		if _, err := raw.SearchInContext(ctx, bleve.NewSearchRequestOptions(search.TextQuery(q), search.DefaultLimit, 0, false)); err != nil {
			raw.Close()
			return err
		}
		base = append(base, time.Since(t0))
	}
	raw.Close()
	op, bp := latencies(ours), latencies(base)
	goal := func(row Row) Row {
		row.Goal, row.Met = "≤ 100 ms at 1M, ahead of both", row.Ours <= 100 && row.Ours <= row.Base
		return row
	}
	r.add(Row{Group: group, Name: "search p50 (20 hits: snippets, fields, sessions checked)", Ours: millis(op.pct(50)), Base: millis(bp.pct(50)), Unit: "ms", BaseName: "the bleve index alone, same queries"})
	r.add(goal(Row{Group: group, Name: "search p99", Ours: millis(op.pct(99)), Base: millis(bp.pct(99)), Unit: "ms", BaseName: "the bleve index alone, same queries"}))
	classes := []string{"a common word", "a rare word", "two words", "a phrase"}
	class := func(l latencies, k int) latencies {
		var out latencies
		for i := k; i < len(l); i += len(classes) {
			out = append(out, l[i])
		}
		return out
	}
	for k, c := range classes {
		r.add(Row{Group: group, Name: "search p50, " + c, Ours: millis(class(op, k).pct(50)), Base: millis(class(bp, k).pct(50)), Unit: "ms", BaseName: "the bleve index alone, same queries"})
		r.add(goal(Row{Group: group, Name: "search p99, " + c, Ours: millis(class(op, k).pct(99)), Base: millis(class(bp, k).pct(99)), Unit: "ms", BaseName: "the bleve index alone, same queries"}))
	}
	p.say("search: the same queries on PostgreSQL's full-text search")
	pgl, note, err := pgSearch(ctx, b, queries)
	switch {
	case err != nil && ctx.Err() == nil:
		r.note("search: no comparison with PostgreSQL: %v", err)
	case err == nil:
		r.note("search: %s", note)
		const pgName = "PostgreSQL full-text search (tsvector 'simple', GIN, ts_rank), same messages and queries"
		r.add(Row{Group: group, Name: "search p50 against PostgreSQL", Ours: millis(op.pct(50)), Base: millis(pgl.pct(50)), Unit: "ms", BaseName: pgName})
		r.add(goal(Row{Group: group, Name: "search p99 against PostgreSQL", Ours: millis(op.pct(99)), Base: millis(pgl.pct(99)), Unit: "ms", BaseName: pgName}))
		for k, c := range classes {
			r.add(Row{Group: group, Name: "search p99 against PostgreSQL, " + c, Ours: millis(class(op, k).pct(99)), Base: millis(class(pgl, k).pct(99)), Unit: "ms", BaseName: pgName})
		}
	}

	// Lag: entries appended at a steady pace while an indexer follows
	// (a new one for each pace: its lags are its own), against plain
	// ordered consumers of the same streams.
	for _, pace := range []struct{ rate, n, sessions int }{{100, 500, 1}, {1000, 5000, 8}} {
		x2, _, err := search.Open(search.DefaultConfig(indexDir))
		if err != nil {
			return err
		}
		ix2, err := search.Follow(ctx, x2, b)
		if err == nil {
			err = ix2.CaughtUp(ctx)
		}
		var plain latencies
		if err == nil {
			plain, err = plainLag(ctx, b, pace.n, func() error { return appendSteadily(ctx, b, text, pace.rate, pace.n, pace.sessions) })
		}
		if err == nil {
			err = ix2.CaughtUp(ctx)
		}
		if ix2 != nil {
			ix2.Close(context.WithoutCancel(ctx))
		}
		x2.Close()
		if err != nil {
			return err
		}
		st := ix2.Status()
		r.add(Row{Group: group, Name: fmt.Sprintf("index lag p50 (stored → searchable), %d appends/s over %d session(s)", pace.rate, pace.sessions),
			Ours: millis(st.LagP50), Base: millis(plain.pct(50)), Unit: "ms", BaseName: "stored → delivered to a plain consumer"})
		row := Row{Group: group, Name: "index lag p99", Ours: millis(st.LagP99), Base: millis(plain.pct(99)), Unit: "ms", BaseName: "stored → delivered to a plain consumer"}
		if pace.rate == 1000 {
			row.Goal, row.Met = "≤ 1 s at 1,000 appends/s", st.LagP99 <= time.Second
		}
		r.add(row)
	}
	return nil
}

// appendSteadily appends n messages at rate a second, spread over
// sessions sessions, each written by a writer of its own.
func appendSteadily(ctx context.Context, b *stream.Backend, text func(*rand.Rand) string, rate, n, sessions int) error {
	var g errgroup.Group
	for w := range sessions {
		g.Go(func() error {
			st, err := b.CreateStore(ctx, header(fmt.Sprintf("srch-live-%d-%d", rate, w)))
			if err != nil {
				return err
			}
			defer st.Close(ctx)
			rng := rand.New(rand.NewPCG(9, uint64(w)))
			parent := ""
			tick := time.NewTicker(time.Duration(sessions) * time.Second / time.Duration(rate))
			defer tick.Stop()
			for k := range n / sessions {
				<-tick.C
				m := session.Message{Role: session.RoleUser, Content: session.TextContent(text(rng)), Timestamp: 1735689600000}
				e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", k+1), ParentID: parent, Timestamp: session.FormatTime(time.Now()), Message: &m}
				if err := st.AppendBatch(ctx, []*session.Entry{e}); err != nil {
					return err
				}
				parent = e.ID
			}
			return nil
		})
	}
	return g.Wait()
}

// plainLag runs write while an ordered consumer of each partition takes
// in what it stores, and returns each message's delay from stored to
// delivered, of the first want (every message write stores, headers
// included).
func plainLag(ctx context.Context, b *stream.Backend, want int, write func() error) (latencies, error) {
	got := make(chan time.Duration, 4*want)
	for _, part := range b.Partitions() {
		cons, err := part.Stream().OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
		if err != nil {
			return nil, err
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			if meta, err := m.Metadata(); err == nil {
				select {
				case got <- time.Since(meta.Timestamp):
				default:
				}
			}
		})
		if err != nil {
			return nil, err
		}
		defer cc.Stop()
	}
	if err := write(); err != nil {
		return nil, err
	}
	var lags latencies
	timeout := time.After(30 * time.Second)
	for len(lags) < want {
		select {
		case d := <-got:
			lags = append(lags, d)
		case <-timeout:
			return nil, fmt.Errorf("bench: plain consumers received %d of %d messages", len(lags), want)
		}
	}
	return lags, nil
}
