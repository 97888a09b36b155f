package service

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// The operations that read a session whole: open and stats (the paged
// reads are in reads.go).

func describe(ctx context.Context, st *stream.Store) (SessionReply, error) {
	var r SessionReply
	err := st.ReadStateAt(ctx, func(t *session.Tree, seq uint64) error {
		r.Session, r.Sequence = t.Info(), seq
		h := t.Header()
		hb, err := codec.EncodeHeader(&h)
		if err != nil {
			return err
		}
		r.Header = jsontext.Value(hb)
		for _, l := range t.Labels() {
			r.Labels = append(r.Labels, LabelReply{ID: l.ID, Label: l.Label, Timestamp: l.Timestamp})
		}
		return nil
	})
	return r, err
}

func (s *Service) open(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *SessionRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	return s.with(ctx, req.Session, func(st *stream.Store) (any, error) { return describe(ctx, st) })
}

func (s *Service) stats(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *SessionRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	return s.with(ctx, req.Session, func(st *stream.Store) (any, error) {
		x, err := st.Stats(ctx)
		if err != nil {
			return nil, err
		}
		r := StatsReply{
			Entries: x.Entries, ByType: map[string]int{}, Messages: x.Messages, ByRole: x.ByRole,
			ToolCalls: x.ToolCalls, Compactions: x.Compactions, BranchSummaries: x.BranchSummaries, Redactions: x.Redactions,
			Usage: UsageReply{Input: x.Usage.Input, Output: x.Usage.Output, CacheRead: x.Usage.CacheRead,
				CacheWrite: x.Usage.CacheWrite, TotalTokens: x.Usage.TotalTokens, Cost: x.Usage.Cost.Total},
		}
		for t, n := range x.ByType {
			r.ByType[string(t)] = n
		}
		r.Sequence, err = st.Sequence(ctx)
		return r, err
	})
}
