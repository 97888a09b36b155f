package tracker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// Reading a replica: a session's tree, and waiting for a sequence.

// Read runs fn on the tree of session id, loading it first if needed. fn
// runs under the read lock: it must not keep t or call the replica. The
// tree holds entries as stored: content stored apart is a reference (so
// a replica's memory follows its trees, not their images); Entries, or
// Resolve, give the content.
func (r *Tracker) Read(ctx context.Context, id string, fn func(t *session.Tree) error) error {
	if r.cfg.Session != "" && id != r.cfg.Session {
		return fmt.Errorf("%w: this replica follows only %s, not %s", ErrNotFollowed, r.cfg.Session, id)
	}
	for range 3 {
		r.mu.RLock()
		if r.closed {
			r.mu.RUnlock()
			return ErrClosed
		}
		if h, ok := r.trees.Get(id); ok {
			err := fn(h.tree)
			r.mu.RUnlock()
			return err
		}
		r.mu.RUnlock()
		reply := make(chan error, 1)
		select {
		case r.loads <- loadReq{id: id, reply: reply}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-reply:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("tracker: %s was evicted as soon as it was loaded (MaxSessions %d)", id, r.cfg.MaxSessions)
}

// WaitFor blocks until the replica has applied sequence seq of session
// id's partition — the sequence a writer's append to id returned — or
// ctx ends.
func (r *Tracker) WaitFor(ctx context.Context, id string, seq uint64) error {
	if err := session.ValidateSessionID(id); err != nil {
		return err
	}
	if r.cfg.Session != "" && id != r.cfg.Session {
		return fmt.Errorf("%w: this replica follows only %s, not %s", ErrNotFollowed, r.cfg.Session, id)
	}
	part := stream.PartitionOf(id, len(r.parts))
	checked := false
	var applied uint64
	var notify chan struct{}
	err := await.Until(ctx, await.Poll{First: 50 * time.Millisecond, Most: time.Second}, func() <-chan struct{} { return notify },
		func() (bool, error) {
			r.mu.RLock()
			var closed bool
			applied, notify, closed = r.applied[part], r.notify, r.closed
			r.mu.RUnlock()
			switch {
			case closed:
				return false, ErrClosed
			case applied >= seq:
				return true, nil
			}
			if !checked && r.cfg.Session != "" {
				// A single-session replica never sees other sessions'
				// messages: a sequence of another's is never reached.
				checked = true
				m, err := r.parts[part].Stream().GetMsg(ctx, seq)
				if err == nil {
					if dm, derr := r.b.Decode(m.Subject, m.Data, seq); derr != nil || dm.Session != id {
						return false, fmt.Errorf("%w: %d is not a message of %s", ErrNotFollowed, seq, id)
					}
				}
			}
			return false, nil
		})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("tracker: waiting for sequence %d of %s (applied %d): %w", seq, id, applied, err)
	}
	return err
}

// Entries returns the entries of session id in append order, with the
// content stored apart in place (fetched after the tree's lock is
// released, through the backend's bounded blob cache).
func (r *Tracker) Entries(ctx context.Context, id string) ([]*session.Entry, error) {
	var es []*session.Entry
	err := r.Read(ctx, id, func(t *session.Tree) (err error) {
		es, err = t.Entries()
		return err
	})
	if err != nil {
		return nil, err
	}
	return r.b.Blobs().ResolveAll(ctx, es)
}

// Resolve returns e with the content it holds by reference in place.
func (r *Tracker) Resolve(ctx context.Context, e *session.Entry) (*session.Entry, error) {
	return r.b.Blobs().Resolve(ctx, e)
}
