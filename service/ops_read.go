package service

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// The operations that read a session whole: open and stats (the paged
// reads are in reads.go).

func describe(ctx context.Context, st *stream.Store) (api.SessionReply, error) {
	var r api.SessionReply
	err := st.ReadStateAt(ctx, func(t *session.Tree, seq uint64) error {
		r.Session, r.Sequence = t.Info(), seq
		h := t.Header()
		hb, err := codec.EncodeHeader(&h)
		if err != nil {
			return err
		}
		r.Header = jsontext.Value(hb)
		for _, l := range t.Labels() {
			r.Labels = append(r.Labels, api.LabelReply{ID: l.ID, Label: l.Label, Timestamp: l.Timestamp})
		}
		return nil
	})
	return r, err
}

func (s *Service) open(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.SessionRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) { return describe(ctx, st) })
}

func (s *Service) stats(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.StatsRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		x, err := st.Stats(ctx)
		if err != nil {
			return nil, err
		}
		r := api.StatsReply{
			Entries: x.Entries, ByType: map[string]int{}, Messages: x.Messages, ByRole: x.ByRole,
			ToolCalls: x.ToolCalls, Compactions: x.Compactions, BranchSummaries: x.BranchSummaries, Redactions: x.Redactions,
			Usage: api.UsageReply{Input: x.Usage.Input, Output: x.Usage.Output, CacheRead: x.Usage.CacheRead,
				CacheWrite: x.Usage.CacheWrite, TotalTokens: x.Usage.TotalTokens, Cost: x.Usage.Cost.Total},
		}
		for t, n := range x.ByType {
			r.ByType[string(t)] = n
		}
		if req.Timeline {
			entries, err := st.Entries(ctx)
			if err != nil {
				return nil, err
			}
			r.Timeline, r.TimelineCut = timeline(entries)
		}
		r.Sequence, err = st.Sequence(ctx)
		return r, err
	})
}

// timeline sums the usage of assistant replies by day and model.
func timeline(entries []*session.Entry) ([]api.UsageDay, bool) {
	type key struct{ day, model string }
	rows := map[key]*api.UsageDay{}
	cut := false
	for _, e := range entries {
		m := e.Message
		if m == nil || m.Assistant() == nil || m.Assistant().Usage == nil {
			continue
		}
		a := m.Assistant()
		k := key{e.Timestamp[:min(10, len(e.Timestamp))], a.Provider + "/" + a.Model}
		d := rows[k]
		if d == nil {
			if len(rows) == api.MaxTimeline {
				cut = true
				continue
			}
			d = &api.UsageDay{Day: k.day, Model: k.model}
			rows[k] = d
		}
		d.Replies++
		d.Input += a.Usage.Input
		d.Output += a.Usage.Output
		d.Cost += a.Usage.Cost.Total
	}
	out := make([]api.UsageDay, 0, len(rows))
	for _, d := range rows {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b api.UsageDay) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), strings.Compare(a.Model, b.Model))
	})
	return out, cut
}
