package bench

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// messageScan reads the message entries of a backend's streams, partition
// after partition, through an ordered consumer each, one at a time: what
// the baselines that read everything (a usage sum, PostgreSQL's load)
// read.
type messageScan struct {
	ctx   context.Context
	b     *stream.Backend
	parts []stream.Partition
	it    jetstream.MessagesContext
	last  uint64 // the partition's last sequence when its reading began
}

func scanMessages(ctx context.Context, b *stream.Backend) *messageScan {
	return &messageScan{ctx: ctx, b: b, parts: b.Partitions()}
}

// Next is the next message entry and its session, or nil after the last.
// Messages that do not decode to a message entry are passed over.
func (s *messageScan) Next() (*session.Entry, string, error) {
	for {
		if s.it == nil {
			if len(s.parts) == 0 {
				return nil, "", nil
			}
			if err := s.open(s.parts[0]); err != nil {
				return nil, "", err
			}
			s.parts = s.parts[1:]
		}
		msg, err := s.it.Next(jetstream.NextMaxWait(time.Second))
		if errors.Is(err, nats.ErrTimeout) {
			s.Stop() // nothing more of the filter's
			continue
		}
		if err != nil {
			return nil, "", err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return nil, "", err
		}
		if meta.Sequence.Stream >= s.last || meta.NumPending == 0 {
			s.Stop() // the partition's last: the next call opens the next
		}
		if m, err := s.b.Decode(msg.Subject(), msg.Data(), meta.Sequence.Stream); err == nil && m.Entry != nil && m.Entry.Message != nil {
			return m.Entry, m.Session, nil
		}
	}
}

func (s *messageScan) open(part stream.Partition) error {
	info, err := part.Stream().Info(s.ctx)
	if err != nil {
		return err
	}
	if info.State.LastSeq == 0 {
		return nil // empty: Next goes on to the next partition
	}
	cons, err := part.Stream().OrderedConsumer(s.ctx, jetstream.OrderedConsumerConfig{FilterSubjects: part.TypeFilter(session.TypeMessage).Subjects})
	if err != nil {
		return err
	}
	if s.it, err = cons.Messages(); err != nil {
		return err
	}
	s.last = info.State.LastSeq
	return nil
}

// Stop ends the reading of the current partition.
func (s *messageScan) Stop() {
	if s.it != nil {
		s.it.Stop()
		s.it = nil
	}
}
