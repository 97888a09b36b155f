package replica

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
func (r *Replica) feed(ctx context.Context, from uint64) {
	defer r.wg.Done()
	next := from
	for ctx.Err() == nil {
		cons, err := r.b.Stream().OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{r.b.SessionSubjects(r.cfg.Session)},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    next,
		})
		if err == nil {
			r.bump(func(s *Status) { s.Consumers++ })
			var it jetstream.MessagesContext
			if it, err = cons.Messages(); err == nil {
				err = r.pump(ctx, it, &next)
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

func (r *Replica) pump(ctx context.Context, it jetstream.MessagesContext, next *uint64) error {
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
		case r.in <- msg:
			*next = meta.Sequence.Stream + 1
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// own is the goroutine that changes trees: it applies delivered messages,
// serves loads, and drops the trees of deleted sessions.
func (r *Replica) own(ctx context.Context, index jetstream.KeyWatcher) {
	defer r.wg.Done()
	defer index.Stop()
	updates := index.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-r.in:
			r.apply(msg)
		case req := <-r.loads:
			req.reply <- r.load(ctx, req.id)
		case e, ok := <-updates:
			if !ok {
				updates = nil // the watcher ended: stop listening to it
				continue
			}
			if e == nil || e.Operation() == jetstream.KeyValuePut {
				continue
			}
			r.mu.Lock()
			if r.drop(e.Key()) {
				r.status.Resets++
			}
			r.mu.Unlock()
		}
	}
}

func (r *Replica) apply(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		r.bump(func(s *Status) { s.LastError = err })
		return
	}
	seq := meta.Sequence.Stream
	m, derr := r.b.Decode(msg.Subject(), msg.Data(), seq)
	r.mu.Lock()
	defer func() {
		r.applied = max(r.applied, seq)
		r.status.Lag = meta.NumPending
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
	if err := h.tree.Apply(m.Entry); err != nil {
		r.drop(m.Session)
		r.status.Resets++
		r.status.LastError = fmt.Errorf("replica: %s seq %d: %w", m.Session, seq, err)
		return
	}
	h.seq = seq
	if r.snaps != nil {
		r.snaps.Applied(m.Session, m.Entry)
	}
}

// drop forgets a session's tree, and its snapshot count. Called with mu
// held.
func (r *Replica) drop(id string) bool {
	_, held := r.trees.Remove(id)
	if r.snaps != nil {
		r.snaps.Forget(id)
	}
	return held
}

// load builds a session's tree (snapshot + tail, or the whole stream) and
// holds it, evicting the least recently used beyond MaxSessions. Only the
// owning goroutine (or Start, before it runs) calls it.
func (r *Replica) load(ctx context.Context, id string) error {
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
