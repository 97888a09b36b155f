package stream

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// Creating a session: its header published once, whatever the retries,
// and the session indexed.

// Create implements session.Repo: it writes the header, refusing an id in
// use, and indexes the session.
func (b *Backend) Create(ctx context.Context, h session.Header) (session.Store, error) {
	return b.CreateStore(ctx, h)
}

// CreateStore is Create returning the concrete store.
func (b *Backend) CreateStore(ctx context.Context, h session.Header) (*Store, error) {
	if err := session.ValidateSessionID(h.ID); err != nil {
		return nil, err
	}
	return b.partOf(h.ID).createStore(ctx, h)
}

func (b *Backend) createStore(ctx context.Context, h session.Header) (*Store, error) {
	return b.createStoreOf(ctx, h, session.NewTree)
}

// createStoreOf is createStore with the store's tree made by newTree: a
// lean one (session.NewLeanTree) writes, in memory that does not grow
// with what it holds, and takes no snapshot (it holds no content to take
// one of); it is not for reading back.
func (b *Backend) createStoreOf(ctx context.Context, h session.Header, newTree func(session.Header) *session.Tree) (*Store, error) {
	if err := session.ValidateHeader(&h); err != nil {
		return nil, err
	}
	if h.Version == 0 {
		h.Version = session.CurrentVersion
	}
	if err := knownVersion(&h); err != nil {
		return nil, err
	}
	data, err := codec.EncodeHeaderMsgpack(&h)
	if err != nil {
		return nil, err
	}
	local := b.cfg.edge && b.cfg.syncRules.keepsLocal(h)
	subject := b.cfg.headerSubject(h.ID)
	if local {
		subject = b.cfg.localSubject(h.ID)
	}
	m := nats.NewMsg(subject)
	m.Data = data
	// An id of this call's own: a re-creation after a delete (an
	// unarchive, a restore: the same header) is not taken for a duplicate
	// inside the dedupe window, and a resend of this one is.
	m.Header.Set(jetstream.MsgIDHeader, h.ID+":session:"+nuid.Next())
	pctx, cancel := b.withTimeout(ctx)
	defer cancel()
	// Sent again while its outcome is unknown: a copy that was stored
	// comes back as a duplicate of its message id, which is then ours.
	var ack *jetstream.PubAck
	resent := false
	err = b.rq.Resend(pctx, func(ctx context.Context) (err error) {
		ack, err = b.publishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(0, b.cfg.sessionSubjects(h.ID)))
		return err
	}, func(error) { resent = true })
	if jsx.IsWrongLastSeq(err) && resent {
		// A stream of one replica checks the sequence before the message
		// id, so a resend of a header that was stored is refused as if
		// the session existed: it does, and it may be ours.
		if seq, ours, lerr := b.headerIs(pctx, h.ID, m.Header.Get(jetstream.MsgIDHeader)); lerr == nil && ours {
			ack, err = &jetstream.PubAck{Sequence: seq}, nil
		}
	}
	if jsx.IsWrongLastSeq(err) || (err == nil && ack.Duplicate && !resent) {
		return nil, fmt.Errorf("%w: %q", session.ErrSessionExists, h.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("stream: create %s: %w", h.ID, err)
	}
	t := newTree(h)
	st := newStore(b, t, ack.Sequence, ack.Sequence, b.policy)
	st.setKept(local)
	// Indexed in the background, as appends are: a create depends on its
	// partition's stream alone.
	st.idx.touch(t.Info(), ack.Sequence)
	return st, nil
}

// headerIs reports whether session id's header was written with message
// id msgID, and its sequence.
func (b *Backend) headerIs(ctx context.Context, id, msgID string) (uint64, bool, error) {
	subject := b.cfg.sessionSubjects(id)
	if b.cfg.typed {
		subject = b.cfg.headerSubject(id)
	}
	seq, err := b.freshLast(ctx, subject)
	if err != nil {
		return 0, false, err
	}
	var msg *jetstream.RawStreamMsg
	if b.cfg.typed {
		msg, err = b.stream.GetMsg(ctx, seq)
	} else { // the header is the session's first message
		msg, err = b.stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	}
	if err != nil {
		return 0, false, err
	}
	return msg.Sequence, msg.Header.Get(jetstream.MsgIDHeader) == msgID, nil
}

// publishMsg is the JetStream publish of headers (a test may intercept
// it).
func (b *Backend) publishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if b.publishHook != nil {
		return b.publishHook(ctx, m, opts...)
	}
	return b.js.PublishMsg(ctx, m, opts...)
}
