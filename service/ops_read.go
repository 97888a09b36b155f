package service

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/usage"
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
	prices := s.cfg.Prices
	if prices == nil {
		prices = usage.Default()
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		x, err := st.Stats(ctx)
		if err != nil {
			return nil, err
		}
		entries, err := usage.Read(ctx, st)
		if err != nil {
			return nil, err
		}
		calls := usage.Counted(entries)
		r := api.StatsReply{
			Entries: x.Entries, ByType: map[string]int{}, Messages: x.Messages, ByRole: x.ByRole,
			ToolCalls: x.ToolCalls, Compactions: x.Compactions, BranchSummaries: x.BranchSummaries, Redactions: x.Redactions,
			Usage: api.UsageReplyOf(sumCalls(calls, prices)),
		}
		for t, n := range x.ByType {
			r.ByType[string(t)] = n
		}
		if req.Timeline {
			r.Timeline, r.TimelineCut = timeline(calls, prices)
		}
		r.Sequence, err = st.Sequence(ctx)
		return r, err
	})
}

func sumCalls(calls []usage.Call, prices *usage.Table) api.UsageSums {
	var sums api.UsageSums
	for _, c := range calls {
		sums.Add(prices.Sums(c))
	}
	return sums
}

// timeline sums a session's model calls by day and model.
func timeline(calls []usage.Call, prices *usage.Table) ([]api.UsageDay, bool) {
	rows, cut := usage.ByDay(calls, prices, api.MaxTimeline)
	out := make([]api.UsageDay, len(rows))
	for i, r := range rows {
		out[i] = api.UsageDayOf(r.Day, r.Model, r.UsageSums)
	}
	return out, cut
}
