package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// watchStart is where an ephemeral watch starts.
type watchStart struct {
	policy jetstream.DeliverPolicy
	seq    uint64
	at     time.Time
}

func parseFrom(v string) (watchStart, error) {
	switch v {
	case "now":
		return watchStart{policy: jetstream.DeliverNewPolicy}, nil
	case "start":
		return watchStart{policy: jetstream.DeliverAllPolicy}, nil
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
		return watchStart{policy: jetstream.DeliverByStartSequencePolicy, seq: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return watchStart{policy: jetstream.DeliverByStartTimePolicy, at: t}, nil
	}
	return watchStart{}, usageError("-from %q: now, start, a stream sequence (1 or more) or an RFC 3339 time", v)
}

// watchFrom prints the entries of the given types from an ordered
// consumer of each partition (nothing on the server outlives the watch),
// until ctx ends or the printer's limit is reached.
func watchFrom(ctx context.Context, b *stream.Backend, types []session.EntryType, start watchStart, p *printer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(b.Partitions()))
	for _, part := range b.Partitions() {
		filter := part.TypeFilter(types...)
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filter.Subjects, DeliverPolicy: start.policy}
		switch start.policy {
		case jetstream.DeliverByStartSequencePolicy:
			cfg.OptStartSeq = start.seq
		case jetstream.DeliverByStartTimePolicy:
			cfg.OptStartTime = &start.at
		}
		cons, err := part.Stream().OrderedConsumer(ctx, cfg)
		if err != nil {
			return fmt.Errorf("watch: partition %d: %w", part.Index(), err)
		}
		it, err := cons.Messages()
		if err != nil {
			return fmt.Errorf("watch: partition %d: %w", part.Index(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer it.Stop()
			if err := watchPartition(ctx, b, it, filter, p); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	<-ctx.Done()
	cancel()
	wg.Wait()
	close(errs)
	return <-errs // nil when none
}

func watchPartition(ctx context.Context, b *stream.Backend, it jetstream.MessagesContext, filter stream.TypeFilter, p *printer) error {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			continue // heartbeats missed: the ordered consumer is made again
		}
		meta, err := msg.Metadata()
		if err != nil {
			continue
		}
		if !filter.Keep(msg.Subject(), msg.Data()) {
			continue
		}
		m, err := b.Decode(msg.Subject(), msg.Data(), meta.Sequence.Stream)
		if err != nil || m.Entry == nil {
			continue // a header, or a message that is no entry
		}
		e, err := b.Blobs().Resolve(ctx, m.Entry)
		if err != nil {
			return err
		}
		if ok, err := p.take(map[string]any{"session": m.Session, "seq": m.Seq}, e); err != nil || !ok {
			return err
		}
	}
}

// removeDurable deletes a durable watch's consumer on every partition.
func removeDurable(ctx context.Context, e env, repo session.Repo, name string) error {
	b, ok := repo.(*stream.Backend)
	if !ok {
		return errors.New("watch needs the JetStream backend")
	}
	removed := 0
	for _, part := range b.Partitions() {
		err := part.Stream().DeleteConsumer(ctx, name)
		switch {
		case err == nil:
			removed++
		case errors.Is(err, jetstream.ErrConsumerNotFound):
		default:
			return fmt.Errorf("watch: remove %s: %w", name, err)
		}
	}
	if removed == 0 {
		return fmt.Errorf("watch: no durable %q", name)
	}
	fmt.Fprintf(e.stdout, "removed durable %s (%d partition(s))\n", name, removed)
	return nil
}
