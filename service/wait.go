package service

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// Waiting for a session to reach a sequence (read-your-writes).

// wait returns once the session reflects every message up to the
// sequence: the stream has reached it and the session was brought up to
// date after that. New messages of the session wake it; messages of other
// sessions are noticed by polling the stream's last sequence.
func (s *Service) wait(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.WaitRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if req.Sequence == 0 {
		return nil, badRequest("/sequence", "sequence is required")
	}
	timeout := s.cfg.MaxWait
	switch {
	case req.TimeoutMs < 0:
		return nil, badRequest("/timeoutMs", "timeoutMs must not be negative")
	case req.TimeoutMs > 0 && req.TimeoutMs < timeout.Milliseconds(): // no overflow near MaxInt64
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	woke := make(chan struct{}, 1)
	sub, err := s.nc.Subscribe(s.b.SessionSubjects(req.Session), func(*nats.Msg) {
		select {
		case woke <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("service: wait: %w", err)
	}
	defer sub.Unsubscribe()
	// A service that is stopping ends its waits.
	wctx, stop := context.WithCancel(wctx)
	defer stop()
	go func() {
		select {
		case <-s.stopping:
			stop()
		case <-wctx.Done():
		}
	}()
	var r any
	var last uint64
	err = await.Until(wctx, await.Poll{First: 10 * time.Millisecond, Most: 250 * time.Millisecond},
		func() <-chan struct{} { return woke },
		func() (bool, error) {
			info, err := s.b.StreamOf(req.Session).Info(ctx)
			if err != nil {
				return false, fmt.Errorf("service: wait: %w", err)
			}
			last = info.State.LastSeq
			reached := last >= req.Sequence
			r, err = s.with(ctx, req.Session, func(st *stream.Store) (any, error) {
				var r api.WaitReply
				err := st.ReadStateAt(ctx, func(t *session.Tree, seq uint64) error {
					r.Leaf, r.Sequence = t.Leaf(), seq
					return nil
				})
				return r, err
			})
			return reached, err
		})
	switch {
	case err == nil:
		return r, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wctx.Err() == nil:
		return nil, err
	}
	select {
	case <-s.stopping:
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "service is stopping"}
	default:
		return nil, &api.Error{Code: api.CodeTimeout, Message: fmt.Sprintf("the stream did not reach sequence %d within %v (it is at %d)", req.Sequence, timeout, last)}
	}
}
