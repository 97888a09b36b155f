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

	mu    sync.Mutex
	moved chan struct{} // closed at the next reconnection
}

// watchMoves listens to nc until it closes or stop is called.
func watchMoves(nc *nats.Conn) *moves {
	m := &moves{nc: nc, status: nc.StatusChanged(nats.CONNECTED, nats.CLOSED), done: make(chan struct{}), moved: make(chan struct{})}
	go m.run()
	return m
}

func (m *moves) run() {
	defer close(m.done)
	for st := range m.status {
		if st == nats.CLOSED {
			return
		}
		m.mu.Lock()
		close(m.moved)
		m.moved = make(chan struct{})
		m.mu.Unlock()
	}
}

// next is closed when the connection next moves.
func (m *moves) next() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.moved
}

// stop stops listening and waits for the listener. It is idempotent.
func (m *moves) stop() {
	m.nc.RemoveStatusListener(m.status) // closes the channel: run returns
	<-m.done
}
