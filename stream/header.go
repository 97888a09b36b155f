package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// Header reads session id's header, its first message, alone: one direct
// get of one message, however long the session (what a reader that met
// an entry of a session it knows nothing of asks, the search index
// for one). session.ErrSessionNotFound when there is none.
func (b *Backend) Header(ctx context.Context, id string) (session.Header, error) {
	if err := session.ValidateSessionID(id); err != nil {
		return session.Header{}, err
	}
	p := b.partOf(id)
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	var first *jetstream.RawStreamMsg
	err := p.rq.Resend(ctx, func(ctx context.Context) error {
		first = nil
		_, err := p.rq.GetBatchMax(ctx, p.cfg.Stream, p.cfg.sessionSubjects(id), 1, 1, func(m *jetstream.RawStreamMsg, _ uint64) error {
			if first == nil {
				first = m
			}
			return nil
		})
		return err
	}, nil)
	switch {
	case errors.Is(err, jsx.ErrNoMessages) || (err == nil && first == nil):
		return session.Header{}, fmt.Errorf("%w: %s", session.ErrSessionNotFound, id)
	case err != nil:
		return session.Header{}, fmt.Errorf("stream: header of %s: %w", id, err)
	}
	m, err := p.cfg.decodeInPartition(first.Subject, first.Data, first.Sequence)
	if err != nil {
		return session.Header{}, err
	}
	if m.Header == nil {
		return session.Header{}, fmt.Errorf("%w: %s: its first message (%d) is not a header", ErrCorrupt, id, first.Sequence)
	}
	return *m.Header, nil
}
