package gateway

// Client connections: who may hold one, and for how long. A socket costs
// a file descriptor and a goroutine whether or not its owner ever proves
// who it is, so strangers must not be able to hold them all: connections
// are bounded per source address, and the last ReservedConns of MaxConns
// go only to callers who authenticate, and an address opens new ones at
// a bounded rate. Idle connections are what an
// attacker holds cheaply; when room is needed they are closed (those that
// never authenticated first, then the longest idle), and one that never
// authenticated is closed after UntrustedIdleTimeout anyway.

import (
	"container/list"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcore/sessionlog/internal/ratelimit"
)

// connGuard admits connections at accept and tracks their state.
type connGuard struct {
	max, reserve, perAddr int
	untrustedIdle         time.Duration
	newConns              *ratelimit.Keyed // new connections per source address
	proxies               []netip.Prefix   // sources not bounded per address (Config.TrustedProxies)

	mu     sync.Mutex
	open   int
	byAddr map[string]int
	idle   *list.List // of *guardedConn, longest idle first

	peakPerAddr int // the most one address has held at once

	refused, evicted atomic.Int64
}

func newConnGuard(cfg Config) *connGuard {
	return &connGuard{
		max: cfg.MaxConns, reserve: cfg.ReservedConns, perAddr: cfg.MaxConnsPerAddr,
		untrustedIdle: cfg.UntrustedIdleTimeout, byAddr: map[string]int{}, idle: list.New(),
		newConns: ratelimit.NewKeyed(cfg.NewConnRate, cfg.NewConnBurst), proxies: cfg.TrustedProxies,
	}
}

// guardedConn is a client connection as the guard knows it.
type guardedConn struct {
	net.Conn
	g    *connGuard
	addr string

	// trusted: a request on it was authenticated; idle: it waits for its
	// next request (idleAt is set). Atomic: every request reads them
	// (SetReadDeadline) and authenticated ones set trusted, without the
	// guard's lock.
	trusted, idle atomic.Bool

	// Under g.mu:
	reserve bool          // admitted into the reserve: only for trusted use
	idleAt  *list.Element // in g.idle while idle
	gone    bool

	closeOnce sync.Once
}

// addrKey groups a remote address: an IPv4 address, or an IPv6 /64 (what
// one host is usually given).
func addrKey(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := tcp.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return tcp.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// admit decides on a new connection: it is taken (perhaps into the
// reserve, perhaps after closing idle ones to make room) or refused.
func (g *connGuard) admit(c net.Conn) (*guardedConn, bool) {
	key := addrKey(c.RemoteAddr())
	proxy := g.proxied(c.RemoteAddr())
	// An address opening connections faster than its rate would churn the
	// idle ones of everybody else out: refused before it can. (A proxy in
	// front carries everybody's: it is bounded by MaxConns alone.)
	now := time.Now()
	if !proxy {
		if _, ok := ratelimit.Take(g.newConns.Reserve(key, now), now); !ok {
			g.refused.Add(1)
			return nil, false
		}
	}
	var victims []*guardedConn
	g.mu.Lock()
	if !proxy && g.byAddr[key] >= g.perAddr {
		if v := g.idleVictim(key); v != nil {
			victims = append(victims, v)
		} else {
			g.mu.Unlock()
			g.refused.Add(1)
			return nil, false
		}
	}
	shared := g.max - g.reserve
	if g.open >= shared {
		// Keep the reserve free: idle strangers make room first.
		if v := g.untrustedIdleVictim(); v != nil {
			victims = append(victims, v)
		} else if g.open >= g.max {
			if v := g.idleVictim(""); v != nil {
				victims = append(victims, v)
			}
		}
	}
	var gc *guardedConn
	if g.open < g.max { // victims are counted out already
		gc = &guardedConn{Conn: c, g: g, addr: key, reserve: g.open >= shared}
		g.open++
		g.byAddr[key]++
		g.peakPerAddr = max(g.peakPerAddr, g.byAddr[key])
	}
	g.mu.Unlock()
	for _, v := range victims {
		g.evicted.Add(1)
		v.Close()
	}
	if gc == nil {
		g.refused.Add(1)
		return nil, false
	}
	return gc, true
}

// proxied reports whether a is one of the trusted proxies.
func (g *connGuard) proxied(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || len(g.proxies) == 0 {
		return false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range g.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// idleVictim is the longest idle connection (of addr, unless empty),
// untrusted ones first; taken out of the idle list. Called under g.mu.
func (g *connGuard) idleVictim(addr string) *guardedConn {
	var best *list.Element
	for e := g.idle.Front(); e != nil; e = e.Next() {
		gc := e.Value.(*guardedConn)
		if addr != "" && gc.addr != addr {
			continue
		}
		if !gc.trusted.Load() {
			best = e
			break
		}
		if best == nil {
			best = e
		}
	}
	return g.takeIdle(best)
}

func (g *connGuard) untrustedIdleVictim() *guardedConn {
	for e := g.idle.Front(); e != nil; e = e.Next() {
		if !e.Value.(*guardedConn).trusted.Load() {
			return g.takeIdle(e)
		}
	}
	return nil
}

func (g *connGuard) takeIdle(e *list.Element) *guardedConn {
	if e == nil {
		return nil
	}
	gc := e.Value.(*guardedConn)
	g.idle.Remove(e)
	gc.idleAt = nil
	gc.idle.Store(false)
	g.open-- // counted out now, so that the room is there for the caller
	g.byAddr[gc.addr]--
	if g.byAddr[gc.addr] == 0 {
		delete(g.byAddr, gc.addr)
	}
	gc.gone = true
	return gc
}

// state follows http.Server's view of a connection.
func (g *connGuard) state(c net.Conn, s http.ConnState) {
	gc := guarded(c)
	if gc == nil {
		return
	}
	closeNow := false
	g.mu.Lock()
	switch s {
	case http.StateIdle:
		if gc.gone {
			break
		}
		// A connection taken from the reserve serves trusted callers only:
		// after any other request it is closed.
		closeNow = gc.reserve && !gc.trusted.Load()
		if !closeNow && gc.idleAt == nil {
			gc.idleAt = g.idle.PushBack(gc)
			gc.idle.Store(true)
		}
	case http.StateActive, http.StateHijacked:
		if gc.idleAt != nil {
			g.idle.Remove(gc.idleAt)
			gc.idleAt = nil
			gc.idle.Store(false)
		}
	case http.StateClosed:
		g.forget(gc)
	}
	g.mu.Unlock()
	if closeNow {
		gc.Close()
	}
}

// forget counts a connection out, once. Called under g.mu.
func (g *connGuard) forget(gc *guardedConn) {
	if gc.idleAt != nil {
		g.idle.Remove(gc.idleAt)
		gc.idleAt = nil
		gc.idle.Store(false)
	}
	if gc.gone {
		return
	}
	gc.gone = true
	g.open--
	g.byAddr[gc.addr]--
	if g.byAddr[gc.addr] == 0 {
		delete(g.byAddr, gc.addr)
	}
}

// trust marks the connection of an authenticated request.
func (g *connGuard) trust(ctx context.Context) {
	gc, _ := ctx.Value(connKey{}).(*guardedConn)
	if gc == nil {
		return
	}
	gc.trusted.Store(true)
}

// Close counts the connection out when the server did not (a hijacked
// one, or one closed by the guard).
func (gc *guardedConn) Close() error {
	var err error
	gc.closeOnce.Do(func() {
		err = gc.Conn.Close()
		gc.g.mu.Lock()
		gc.g.forget(gc)
		gc.g.mu.Unlock()
	})
	return err
}

// SetReadDeadline shortens the wait for the next request on an idle
// connection that never authenticated (http.Server marks a connection idle
// just before it sets that wait).
func (gc *guardedConn) SetReadDeadline(t time.Time) error {
	if gc.idle.Load() && !gc.trusted.Load() && gc.g.untrustedIdle > 0 {
		if limit := time.Now().Add(gc.g.untrustedIdle); t.IsZero() || t.After(limit) {
			t = limit
		}
	}
	return gc.Conn.SetReadDeadline(t)
}

type connKey struct{}

// connOf is the network connection a request came on (under TLS, the
// TCP connection beneath), or nil.
func connOf(ctx context.Context) net.Conn {
	gc, _ := ctx.Value(connKey{}).(*guardedConn)
	if gc == nil {
		return nil
	}
	return gc.Conn
}

// guarded finds the guard's record under the connection http.Server holds.
func guarded(c net.Conn) *guardedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	gc, _ := c.(*guardedConn)
	return gc
}

// guardListener admits connections through the guard; refused ones are
// closed at once, so a flood costs no descriptor beyond the accept.
type guardListener struct {
	net.Listener
	g *connGuard
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc, ok := l.g.admit(c); ok {
			return gc, nil
		}
		c.Close()
	}
}

// ConnStats says what the connection guard has done.
type ConnStats struct {
	Open    int   // client connections open now
	Refused int64 // connections closed at accept (per-address bound, or full)
	Evicted int64 // idle connections closed to make room
	// PeakPerAddr is the most connections one source address has held at
	// once.
	PeakPerAddr int
}

// Conns reports the client connections.
func (g *Gateway) Conns() ConnStats {
	g.guard.mu.Lock()
	defer g.guard.mu.Unlock()
	return ConnStats{Open: g.guard.open, Refused: g.guard.refused.Load(), Evicted: g.guard.evicted.Load(), PeakPerAddr: g.guard.peakPerAddr}
}
