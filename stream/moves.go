package stream

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// moves tells requests in flight that the connection has moved to another
// server. A request written to the old connection is lost with it (the
// client resends only what it had not written yet), so waiting out the
// attempt would only delay the resend: an attempt ends when the
// connection moves (see Backend.resend).
type moves struct {
	nc     *nats.Conn
	status chan nats.Status
	done   chan struct{}
	moved  signal // at each reconnection
}

// watchMoves listens to nc until it closes or stop is called.
func watchMoves(nc *nats.Conn) *moves {
	m := &moves{nc: nc, status: nc.StatusChanged(nats.CONNECTED, nats.CLOSED), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *moves) run() {
	defer close(m.done)
	for st := range m.status {
		if st == nats.CLOSED {
			return
		}
		m.moved.fire()
	}
}

// next is closed when the connection next moves.
func (m *moves) next() <-chan struct{} { return m.moved.next() }

// signal is an event that those waiting for its next occurrence hear of:
// next returns a channel closed when it next fires. The zero value is
// ready.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// stop stops listening and waits for the listener. It is idempotent.
func (m *moves) stop() {
	m.nc.RemoveStatusListener(m.status) // closes the channel: run returns
	<-m.done
}
