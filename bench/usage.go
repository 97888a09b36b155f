package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/usage"
)

// The search bench's sessions are spread over usageDays days from
// usageEpoch, in usageProjects working directories, made by four agents;
// their replies come from six models.
var (
	usageEpoch    = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	usageModels   = []string{"claude-sonnet-4", "claude-opus-4", "gpt-5", "gpt-5-mini", "gemini-3-pro", "qwen3-coder"}
	usageAgents   = []string{"", "claude-code", "codex", "langgraph"}
	usageDays     = 90
	usageProjects = 50
)

// usageReports is how many reports each latency is taken over.
const usageReportRuns = 200

func usageHeader(i int) session.Header {
	h := header(fmt.Sprintf("srch-%07d", i))
	h.Cwd = fmt.Sprintf("/home/dev/project-%02d", i%usageProjects)
	if a := usageAgents[i%len(usageAgents)]; a != "" {
		h.Metadata = session.Raw(`{"source":"` + a + `"}`)
	}
	return h
}

// usageReply is an assistant's members with what its call consumed.
func usageReply(rng *rand.Rand, sid int) *session.AssistantFields {
	model := usageModels[(sid+rng.IntN(2))%len(usageModels)]
	u := &session.Usage{Input: 500 + rng.Int64N(20000), Output: 50 + rng.Int64N(2000), CacheRead: rng.Int64N(10000)}
	u.TotalTokens = u.Input + u.Output + u.CacheRead
	u.Cost.Total = float64(u.Input)*3e-6 + float64(u.Output)*15e-6 + float64(u.CacheRead)*3e-7
	return &session.AssistantFields{Provider: "p", Model: model, StopReason: "stop", Usage: u}
}

// claudeLines are two lines of one API message as Claude Code writes them,
// the reply e's usage on each (the first with a partial output count) and
// no cost: what the import keeps of its lines, for the index to count once
// and price.
func claudeLines(e *session.Entry, k int) (first, last session.Raw) {
	a := e.Message.Assistant()
	u := a.Usage
	a.Usage, a.Model, a.Provider = nil, "claude-sonnet-4-5", "anthropic"
	line := func(output int64) session.Raw {
		return session.Raw(fmt.Sprintf(`{"type":"assistant","timestamp":%q,"requestId":"req_%d","message":{"id":"msg_%s_%d","model":"claude-sonnet-4-5","usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":0}}}`,
			e.Timestamp, k, e.ID, k, u.Input, output, u.CacheRead))
	}
	return line(1), line(u.Output)
}

// usageReports measures reports of usage across the bench's sessions
// (the table the index keeps as entries pass) against reading the
// stream's messages to sum the same (what a report would cost without
// it).
func usageReports(ctx context.Context, x *search.Index, b *stream.Backend, group string, r *Report, p progress) error {
	p.say("search: usage reports")
	reqs := []api.UsageRequest{
		{},
		{By: []string{api.UsageByProject}},
		{By: []string{api.UsageByMonth, api.UsageByAgent}},
		{By: []string{api.UsageByModel}, Since: "2026-07-01", Until: "2026-07-31"},
		{By: []string{api.UsageByDay}, Project: "/home/dev/project-07"},
		{By: []string{api.UsageBySession}},
	}
	var lat latencies
	var want api.UsageRow
	for i := range usageReportRuns {
		t0 := time.Now()
		rep, err := x.Usage(ctx, reqs[i%len(reqs)])
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
		if i == 0 {
			want = rep.Total
		}
	}
	t0 := time.Now()
	got, n, err := scanUsage(ctx, b)
	if err != nil {
		return err
	}
	scan := time.Since(t0)
	if got.Tokens != want.Tokens || got.Turns != want.Turns || got.UnpricedCalls != want.UnpricedCalls || math.Abs(got.Cost-want.Cost) > 1e-6*math.Max(1, want.Cost) {
		return fmt.Errorf("bench: usage: the report sums %d tokens over %d turns ($%.2f), the stream %d over %d ($%.2f)", want.Tokens, want.Turns, want.Cost, got.Tokens, got.Turns, got.Cost)
	}
	base := fmt.Sprintf("reading the stream's %d messages to sum them", n)
	r.add(Row{Group: group, Name: "usage report p50 (by day and model, project, month and agent, a month's models, a project's days, sessions)", Ours: millis(lat.pct(50)), Base: millis(scan), Unit: "ms", BaseName: base})
	p99 := lat.pct(99)
	r.add(Row{Group: group, Name: "usage report p99", Ours: millis(p99), Base: millis(scan), Unit: "ms", BaseName: base,
		Goal: "≤ 50 ms at 1M messages", Met: p99 <= 50*time.Millisecond})
	return nil
}

// scanUsage sums the usage of every model call in b's streams, as the
// index counts it (each API call once, priced): each session's messages
// through a usage.Reader and Ledger of its own.
func scanUsage(ctx context.Context, b *stream.Backend) (sum api.UsageRow, n int, err error) {
	scan := scanMessages(ctx, b)
	defer scan.Stop()
	type reading struct {
		r usage.Reader
		l usage.Ledger
	}
	sessions := map[string]*reading{}
	prices := usage.Default()
	for {
		e, id, err := scan.Next()
		if err != nil || e == nil {
			return sum, n, err
		}
		n++
		rd := sessions[id]
		if rd == nil {
			rd = &reading{l: usage.Ledger{Window: 8}}
			sessions[id] = rd
		}
		for _, c := range rd.r.Calls(e) {
			counted, old, replaced := rd.l.Add(c)
			if replaced {
				sum.Sub(prices.Sums(old))
			}
			if counted {
				sum.Add(prices.Sums(c))
			}
		}
	}
}
