package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentcore/sessionlog/session"
)

// A Pipeline streams one writer's appends to a session without waiting
// for each: entries appended while a batch is in flight wait, and go
// together as the next atomic batch once it is acknowledged, so a burst
// (streamed tool output, a whole turn) costs one round trip, not one an
// entry.
//
// Waiting entries go as a batch only when they are enough to pay for it,
// by the backend's costs of sends (sendCosts), and otherwise the first of
// them alone: a trickle of entries costs what appending them one by one
// would.
//
// The chain stays conditional. Its first batch expects the session's last
// sequence as the store knew it when the pipeline began, and each batch
// the one its predecessor left: a write by anyone else in between (a
// conflict, *session.ConflictError) — or any other failure — stops the
// chain. Nothing appended after is stored, and Wait and Close say where
// it stopped (*PipelineError). One case continues instead: a batch whose
// outcome was unknown (its acknowledgement lost) and that is then found
// stored goes on from the session as the store then sees it, which may
// include another writer's append made after the batch.
type Pipeline struct {
	s      *Store
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // one pending wake-up for the sender

	mu       sync.Mutex
	queue    []*session.Entry // appended, not yet sent
	ids      map[string]bool  // of the entries appended and not yet stored
	appended int
	stored   int
	expect   uint64 // the session's last sequence the next batch expects
	last     string // the id an entry without a parent goes after
	err      *PipelineError
	closed   bool
	changed  chan struct{} // closed when stored or err changes
}

// PipelineError is a pipeline's chain stopped: the first Stored entries
// appended were stored, in order, and none after; Entry is the first not
// stored.
type PipelineError struct {
	Stored int
	Entry  string
	Err    error
}

func (e *PipelineError) Error() string {
	return fmt.Sprintf("stream: pipeline stopped after %d entries stored, at entry %q: %v", e.Stored, e.Entry, e.Err)
}

func (e *PipelineError) Unwrap() error { return e.Err }

// ErrPipelineClosed refuses an append to a closed pipeline.
var ErrPipelineClosed = errors.New("stream: pipeline closed")

// Pipeline starts a pipeline of appends to the store's session, from the
// state the store holds (CatchUp first to start from the stream's). It runs
// until ctx ends or it is closed. Entries appended to it must not be
// changed afterwards (the tree keeps them), nor appended through the
// store by other means meanwhile: that is another writer, and stops the
// chain.
func (s *Store) Pipeline(ctx context.Context) (*Pipeline, error) {
	var expect uint64
	var leaf string
	if err := s.ReadStateAt(ctx, func(t *session.Tree, seq uint64) error {
		expect, leaf = seq, t.Leaf()
		return nil
	}); err != nil {
		return nil, err
	}
	p := &Pipeline{s: s, wake: make(chan struct{}, 1), ids: map[string]bool{}, expect: expect, last: leaf, changed: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.wg.Add(1)
	go p.send()
	return p, nil
}

// maxQueued is how many entries may wait to be sent: an Append beyond
// waits for room, so a writer faster than the server holds a bounded
// backlog rather than all it produced.
const maxQueued = 4 * MaxBatch

// Append queues e after the entries appended before it: an entry without
// a parent goes after the last one appended (the first, after the leaf).
// It returns at once unless maxQueued entries wait to be sent, then as
// soon as there is room; an entry that cannot be an entry is refused
// here, one that does not fit the tree when it is sent stops the chain.
// Once the chain has stopped, Append returns its *PipelineError; once the
// pipeline's context has ended, its error.
func (p *Pipeline) Append(e *session.Entry) error {
	if e == nil {
		return fmt.Errorf("%w: a nil entry", session.ErrInvalidEntry)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) >= maxQueued && p.err == nil {
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-p.ctx.Done():
		}
		p.mu.Lock()
		if p.ctx.Err() != nil && p.err == nil {
			return p.ctx.Err()
		}
	}
	switch {
	case p.err != nil:
		return p.err
	case p.closed:
		return ErrPipelineClosed
	case p.ids[e.ID]:
		return fmt.Errorf("%w: entry %q is already in the pipeline", session.ErrInvalidEntry, e.ID)
	}
	parent := e.ParentID
	if parent == "" && e.Type != session.TypeSession {
		e.ParentID = p.last
	}
	if err := session.ValidateWrite(e); err != nil {
		e.ParentID = parent
		return err
	}
	p.queue = append(p.queue, e)
	p.ids[e.ID] = true
	p.appended++
	p.last = e.ID
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// send is the pipeline's one goroutine: it sends what is queued, a batch
// at a time, until the context ends.
func (p *Pipeline) send() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			p.mu.Lock()
			if len(p.queue) > 0 && p.err == nil {
				p.fail(p.queue[0].ID, p.ctx.Err())
			}
			p.mu.Unlock()
			return
		case <-p.wake:
		}
		for p.sendBatch() {
		}
	}
}

// sendBatch sends the next batch; false when there is none to send.
func (p *Pipeline) sendBatch() bool {
	p.mu.Lock()
	if len(p.queue) == 0 || p.err != nil {
		p.mu.Unlock()
		return false
	}
	n := p.s.b.costs.size(len(p.queue))
	batch, expect := p.queue[:n:n], p.expect
	p.queue = p.queue[n:]
	p.mu.Unlock()
	var at uint64
	err := p.s.AppendWith(p.ctx, batch, AppendOptions{Policy: ReturnConflict, IfSequence: expect, storedAt: &at})
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.fail(batch[0].ID, err)
		return false
	}
	for _, e := range batch {
		delete(p.ids, e.ID)
	}
	p.stored += n
	p.expect = at
	p.notify()
	return true
}

// fail stops the chain at entry id (call with mu held).
func (p *Pipeline) fail(id string, err error) {
	p.err = &PipelineError{Stored: p.stored, Entry: id, Err: err}
	p.queue = nil
	p.notify()
}

func (p *Pipeline) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Wait waits until every entry appended so far is stored, and returns how
// many the pipeline stored; or the chain's *PipelineError once it stops.
func (p *Pipeline) Wait(ctx context.Context) (int, error) {
	for {
		p.mu.Lock()
		stored, appended, perr, changed := p.stored, p.appended, p.err, p.changed
		p.mu.Unlock()
		switch {
		case perr != nil:
			return stored, perr
		case stored == appended:
			return stored, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return stored, ctx.Err()
		}
	}
}

// Close waits for what was appended (until ctx ends), then stops the
// pipeline. It returns what Wait returns; idempotent.
func (p *Pipeline) Close(ctx context.Context) (int, error) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	n, err := p.Wait(ctx)
	p.cancel()
	p.wg.Wait()
	return n, err
}
