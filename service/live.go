package service

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/stream/live"
)

// Generations being streamed: the live ops, over the deployment's
// stream/live. The writes are checked here (ids, sizes, TTLs); the
// order of a generation's records is JetStream's check.

func (s *Service) liveStart(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.LiveStartRequest](data, nil)
	if err != nil {
		return nil, err
	}
	ttl, err := s.liveTTL(req.TTLMs)
	if err != nil {
		return nil, err
	}
	st, started, err := s.live.Start(ctx, req.Stream, req.Writer, ttl)
	if err != nil {
		return nil, liveError(err)
	}
	r := s.liveReply(req.Stream, st)
	r.Started = started
	return r, nil
}

func (s *Service) livePut(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.LivePutRequest](data, nil)
	if err != nil {
		return nil, err
	}
	ttl, err := s.liveTTL(req.TTLMs)
	if err != nil {
		return nil, err
	}
	if len(req.Chunks) == 0 {
		return nil, badRequest("/chunks", "a put holds at least one chunk")
	}
	for i, c := range req.Chunks {
		// The request's JSON was UTF-8; a chunk ending in half a
		// character (a piece cut badly) would not be once joined.
		if !utf8.ValidString(c) {
			return nil, badRequest(fmt.Sprintf("/chunks/%d", i), "a chunk must be UTF-8 text")
		}
	}
	st, err := s.live.Put(ctx, req.Stream, req.Writer, req.After, req.Chunks, req.Continues, ttl)
	if err != nil {
		return nil, liveError(err)
	}
	return s.liveReply(req.Stream, st), nil
}

func (s *Service) liveEnd(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.LiveWriteRequest](data, nil)
	if err != nil {
		return nil, err
	}
	ttl, err := s.liveTTL(req.TTLMs)
	if err != nil {
		return nil, err
	}
	st, err := s.live.End(ctx, req.Stream, req.Writer, req.After, ttl)
	if err != nil {
		return nil, liveError(err)
	}
	return s.liveReply(req.Stream, st), nil
}

func (s *Service) liveStop(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.LiveRequest](data, nil)
	if err != nil {
		return nil, err
	}
	st, err := s.live.Stop(ctx, req.Stream)
	if err != nil {
		return nil, liveError(err)
	}
	return s.liveReply(req.Stream, st), nil
}

func (s *Service) liveState(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.LiveRequest](data, nil)
	if err != nil {
		return nil, err
	}
	st, err := s.live.State(ctx, req.Stream)
	if err != nil {
		return nil, liveError(err)
	}
	return s.liveReply(req.Stream, st), nil
}

// liveTTL is a request's ttlMs as a TTL (0: the generations' default),
// checked in milliseconds: as nanoseconds a hostile count wraps past 2^63
// into any duration at all.
func (s *Service) liveTTL(ms int64) (time.Duration, error) {
	if maxMs := s.live.Config().MaxTTL.Milliseconds(); ms != 0 && (ms < time.Second.Milliseconds() || ms > maxMs) {
		return 0, badRequest("/ttlMs", "ttlMs %d is not between 1000 and %d", ms, maxMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (s *Service) liveReply(id string, st live.State) api.LiveReply {
	all, _, _ := s.live.Subjects(id)
	r := api.LiveReply{Stream: id, State: api.LiveNone, Seq: st.Seq, JetStream: s.live.Config().Stream, Subject: all}
	switch {
	case st.Ended == live.KindDone:
		r.State = api.LiveDone
	case st.Ended == live.KindStop:
		r.State = api.LiveStopped
	case st.Exists:
		r.State = api.LiveRunning
	}
	return r
}

// liveError names the field a refusal is about.
func liveError(err error) error {
	var ie *live.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	field := map[string]string{"id": "/stream", "ttl": "/ttlMs"}[ie.Field]
	if field == "" {
		field = "/" + ie.Field
	}
	return badRequest(field, "%s", ie.Reason)
}
