package jsx

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go"
)

// Moves tells requests in flight that the connection has moved to another
// server. A request written to the old connection is lost with it (the
// client resends only what it had not written yet), so waiting out the
// attempt would only delay the resend: an attempt ends when the
// connection moves (see Requester.Resend).
type Moves struct {
	nc     *nats.Conn
	status chan nats.Status
	done   chan struct{}
	mu     sync.Mutex
	tell   []*Signal // fired at each reconnection
}

// WatchMoves listens to nc until it closes or stop is called.
func WatchMoves(nc *nats.Conn) *Moves {
	m := &Moves{nc: nc, status: nc.StatusChanged(nats.CONNECTED, nats.CLOSED), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *Moves) run() {
	defer close(m.done)
	for st := range m.status {
		if st == nats.CLOSED {
			return
		}
		m.mu.Lock()
		for _, s := range m.tell {
			s.Fire()
		}
		m.mu.Unlock()
	}
}

// Notify has s fired whenever the connection moves.
func (m *Moves) Notify(s *Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tell = append(m.tell, s)
}

// Signal is an event that those waiting for its next occurrence hear of:
// Next returns a context done when it next fires. A context, not a
// channel, so that a request can be cut short by it without a goroutine
// of its own (context.AfterFunc). The zero value is ready.
type Signal struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

func (s *Signal) Next() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancel(context.Background())
	}
	return s.ctx
}

func (s *Signal) Fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
		s.ctx, s.cancel = nil, nil
	}
}

// Stop stops listening and waits for the listener. It is idempotent.
func (m *Moves) Stop() {
	m.nc.RemoveStatusListener(m.status) // closes the channel: run returns
	<-m.done
}
