package cluster

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// The node's own connections (the store's, the service's, the link's) go
// to its own server only, and never give up: a connection the server
// closed (a slow consumer, a stale ping under load) comes back to it.
// Left to nats.go's defaults it would also try the other nodes of a
// cluster, which do not know this node's keys, and after the same
// refusal twice close for good: the service then answered every request
// "connection closed" and nothing said so (issue 68, item 5).
//
// connWatch follows them: one away from its server longer than
// notReadyAfter makes the node not ready (Ready, /readyz, status); one
// away longer than Config.BrokenAfter breaks the node (Broken), and the
// process exits so that its supervisor starts it again (crash-only).
type connWatch struct {
	mu      sync.Mutex
	away    map[*nats.Conn]awayConn
	broken  chan struct{}
	err     error // why broken, once it is
	limit   time.Duration
	stopped bool
}

type awayConn struct {
	name  string
	since time.Time
	err   error
	timer *time.Timer
}

// notReadyAfter is how long one of the node's own connections may be away
// from its server before the node says it is not ready: a reconnection to
// an in-process server takes milliseconds.
const notReadyAfter = 2 * time.Second

// DefaultBrokenAfter is Config.BrokenAfter's default.
const DefaultBrokenAfter = 30 * time.Second

// ErrBroken is the cause Broken gives: the node cannot serve and will not
// recover by itself.
var ErrBroken = errors.New("cluster: node broken")

func newConnWatch(limit time.Duration) *connWatch {
	return &connWatch{away: map[*nats.Conn]awayConn{}, broken: make(chan struct{}), limit: limit}
}

// options are the node's own connections' options: its server only,
// never giving up, watched.
func (w *connWatch) options(name string) []nats.Option {
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.IgnoreDiscoveredServers(),
		nats.IgnoreAuthErrorAbort(),
		nats.ReconnectWait(50 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) { w.left(nc, name, err) }),
		nats.ReconnectHandler(w.back),
		nats.ClosedHandler(w.back), // closed by its owner: nothing to watch
	}
}

// left records nc away from its server since now.
func (w *connWatch) left(nc *nats.Conn, name string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || nc.IsClosed() {
		return
	}
	if _, ok := w.away[nc]; ok {
		return
	}
	a := awayConn{name: name, since: time.Now(), err: err}
	a.timer = time.AfterFunc(w.limit, func() { w.breakDown(nc) })
	w.away[nc] = a
}

// back forgets nc: reconnected, or closed by its owner.
func (w *connWatch) back(nc *nats.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.away[nc]; ok {
		a.timer.Stop()
		delete(w.away, nc)
	}
}

// breakDown breaks the node if nc is still away.
func (w *connWatch) breakDown(nc *nats.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.away[nc]
	if !ok || w.stopped || w.err != nil {
		return
	}
	w.err = fmt.Errorf("%w: its connection %s has been away from its server for %v (%v)", ErrBroken, a.name, time.Since(a.since).Round(time.Second), a.err)
	close(w.broken)
}

// check says which connection has been away longer than grace, if any.
func (w *connWatch) check(grace time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, a := range w.away {
		if d := time.Since(a.since); d > grace {
			return fmt.Errorf("the node's connection %s has been away from its server for %v (%v)", a.name, d.Round(100*time.Millisecond), a.err)
		}
	}
	return nil
}

// stop ends the watch: the node is closing its connections itself.
func (w *connWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for nc, a := range w.away {
		a.timer.Stop()
		delete(w.away, nc)
	}
}

// Broken is closed when the node cannot serve and will not recover by
// itself (one of its own connections stayed away from its server longer
// than Config.BrokenAfter); BrokenErr then says why. A process running
// the node exits, and its supervisor starts it again.
func (n *Node) Broken() <-chan struct{} { return n.watch.broken }

// BrokenErr says why the node is broken, nil while it is not.
func (n *Node) BrokenErr() error {
	n.watch.mu.Lock()
	defer n.watch.mu.Unlock()
	return n.watch.err
}
