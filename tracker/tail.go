package tracker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/stream"
)

// Following the stream: the consumer that feeds the owner goroutine, and
// the owner, which alone changes the trees.

// feed delivers the followed subjects from sequence `from` on, in order,
// re-creating the consumer after any loss from just past the last message
// it handed on, so that nothing is skipped or repeated.
func (r *Tracker) feed(ctx context.Context, part int, from uint64) {
	defer r.wg.Done()
	next := from
	p := r.parts[part]
	filter := p.Subjects()
	if r.cfg.Session != "" {
		filter = r.b.SessionSubjects(r.cfg.Session)
	}
	for ctx.Err() == nil {
		cons, err := p.Stream().OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{filter},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    next,
		})
		if err == nil {
			r.bump(func(s *Status) { s.Consumers++ })
			var it jetstream.MessagesContext
			if it, err = cons.Messages(); err == nil {
				err = r.pump(ctx, part, it, &next)
				it.Stop()
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.bump(func(s *Status) { s.LastError = err })
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.RetryInterval):
		}
	}
}

func (r *Tracker) pump(ctx context.Context, part int, it jetstream.MessagesContext, next *uint64) error {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				continue // the ordered consumer resets itself
			}
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		if meta.Sequence.Stream < *next {
			continue // delivered again after a reset
		}
		select {
		case r.in <- delivered{part, msg}:
			*next = meta.Sequence.Stream + 1
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watchDeletes hands the sessions removed from a partition's index to
// the owner.
func (r *Tracker) watchDeletes(ctx context.Context, w jetstream.KeyWatcher) {
	defer r.wg.Done()
	stream.Deletions(ctx, w, func(id string) {
		select {
		case r.deleted <- id:
		case <-ctx.Done():
		}
	})
}

// own is the goroutine that changes trees: it applies delivered messages,
// serves loads, and drops the trees of deleted sessions.
func (r *Tracker) own(ctx context.Context) {
	defer r.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-r.in:
			r.apply(d.part, d.msg)
		case req := <-r.loads:
			req.reply <- r.load(ctx, req.id)
		case id := <-r.deleted:
			r.mu.Lock()
			if r.drop(id) {
				r.status.Resets++
			}
			r.mu.Unlock()
		}
	}
}

func (r *Tracker) apply(part int, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		r.bump(func(s *Status) { s.LastError = err })
		return
	}
	seq := meta.Sequence.Stream
	m, derr := r.b.Decode(msg.Subject(), msg.Data(), seq)
	r.mu.Lock()
	defer func() {
		r.applied[part] = max(r.applied[part], seq)
		r.lag[part] = meta.NumPending
		close(r.notify)
		r.notify = make(chan struct{})
		r.mu.Unlock()
	}()
	if errors.Is(derr, stream.ErrNotSession) {
		return // a read barrier: no session's
	}
	if derr != nil {
		r.status.LastError = derr
		return
	}
	h, _ := r.trees.Peek(m.Session)
	if h == nil || seq <= h.seq {
		return // not held (read whole on first use), or already in
	}
	if m.Header != nil {
		// The session was deleted and created again: start over.
		r.drop(m.Session)
		r.status.Resets++
		return
	}
	if h.tree.Has(m.Entry.ID) {
		h.seq = seq // a copy stored twice (a stream source's): the first is the entry
		return
	}
	if err := h.tree.ApplyFrom(msg.Headers().Get(stream.OriginHeader), m.Entry); err != nil {
		r.drop(m.Session)
		r.status.Resets++
		r.status.LastError = fmt.Errorf("tracker: %s seq %d: %w", m.Session, seq, err)
		return
	}
	h.seq = seq
	if r.snaps != nil {
		r.snaps.Applied(m.Session, m.Entry)
	}
}

// drop forgets a session's tree, and its snapshot count. Called with mu
// held.
func (r *Tracker) drop(id string) bool {
	_, held := r.trees.Remove(id)
	if r.snaps != nil {
		r.snaps.Forget(id)
	}
	return held
}

// load builds a session's tree (snapshot + tail, or the whole stream) and
// holds it, evicting the least recently used beyond MaxSessions. Only the
// owning goroutine (or Start, before it runs) calls it.
func (r *Tracker) load(ctx context.Context, id string) error {
	r.mu.RLock()
	_, ok := r.trees.Peek(id)
	r.mu.RUnlock()
	if ok {
		return nil
	}
	l, err := r.b.LoadTree(ctx, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Loads++
	r.status.LastLoad = l.Info.Took
	if l.Info.FromSnapshot {
		r.status.FromSnapshot++
	}
	if err != nil {
		return err
	}
	h := &held{tree: l.Tree, epoch: l.Epoch, seq: l.Seq}
	r.trees.Put(id, h)
	// The followed session is never evicted: the feed keeps it current.
	for _, v := range r.trees.Trim(r.cfg.MaxSessions, func(k string, _ *held) bool { return k != id && k != r.cfg.Session }) {
		if r.snaps != nil {
			r.snaps.Forget(v.tree.Header().ID)
		}
		r.status.Evictions++
	}
	return nil
}
