package cluster

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// A relay bounds the bandwidth of an edge's link (HubConfig.Bandwidth):
// the node's leafnode connects to a listener of its own on loopback,
// which carries the bytes to and from the hub through one token bucket
// for both directions, the protocol's small frames ahead of the sync's
// bulk (relay_lane.go). NATS has no such bound of its own; a first sync
// of months of sessions over a tethered phone should not take the whole
// link.
type relay struct {
	ln     net.Listener
	target string
	lim    *rate.Limiter

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	// carried counts the bytes relayed, both ways.
	carried atomic.Int64
}

// relayChunk is what one write may take of the bucket at once.
const relayChunk = 16 << 10

// startRelay listens on loopback and relays each connection to target
// (host:port) at bytesPerSec at most, in both directions together.
func startRelay(target string, bytesPerSec int64) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	burst := int(min(max(bytesPerSec, relayChunk), 1<<30))
	r := &relay{ln: ln, target: target, lim: rate.NewLimiter(rate.Limit(bytesPerSec), burst), ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.accept)
	return r, nil
}

// addr is where the leafnode connects instead of the hub.
func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		r.wg.Go(func() { r.serve(c) })
	}
}

func (r *relay) track(c net.Conn, on bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on && r.ctx.Err() != nil {
		return false
	}
	if on {
		r.conns[c] = struct{}{}
	} else {
		delete(r.conns, c)
	}
	return true
}

func (r *relay) serve(c net.Conn) {
	defer c.Close()
	var d net.Dialer
	up, err := d.DialContext(r.ctx, "tcp", r.target)
	if err != nil {
		return // the leafnode tries again, as with the hub itself
	}
	defer up.Close()
	if !r.track(c, true) || !r.track(up, true) {
		return
	}
	defer r.track(c, false)
	defer r.track(up, false)
	// Each direction a lane (relay_lane.go), one bucket for both; when
	// one side ends, both do, so that the leafnode sees the link drop.
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	lanes := []*lane{newLane(ctx, r.lim, &r.carried), newLane(ctx, r.lim, &r.carried)}
	var wg sync.WaitGroup
	stop := func() {
		cancel()
		c.Close()
		up.Close()
		for _, l := range lanes {
			l.wake()
		}
	}
	for i, ends := range [][2]net.Conn{{c, up}, {up, c}} {
		l, src, dst := lanes[i], ends[0], ends[1]
		wg.Go(func() { l.read(src) })
		wg.Go(func() {
			l.write(dst)
			stop()
		})
	}
	wg.Wait()
}

// close stops the relay and its connections, and waits for them.
func (r *relay) close() {
	r.mu.Lock()
	r.cancel()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}
