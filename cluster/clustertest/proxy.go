package clustertest

import (
	"net"
	"sync"
)

// Proxy forwards TCP connections to a target: a link that a test can cut
// (connections dropped, new ones refused) or pause (connections kept
// open, bytes held back — a server that stopped answering).
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	resume *sync.Cond // signalled when a pause ends or the proxy closes
	cut    bool
	paused bool
	closed bool
	held   int // bytes read and held back by the pause
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewProxy listens on a random loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.resume = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.pass(n) {
			break
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// pass waits out a pause with n bytes in hand; false when the proxy closed.
func (p *Proxy) pass(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.held += n
		for p.paused && !p.closed {
			p.resume.Wait()
		}
		p.held -= n
	}
	return !p.closed
}

// SetCut drops every connection and refuses new ones (true), or lets them
// through again (false).
func (p *Proxy) SetCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// SetPaused holds back every byte from now on (true), or sends what it
// held and lets bytes through again (false).
func (p *Proxy) SetPaused(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = paused
	if !paused {
		p.resume.Broadcast()
	}
}

// Held is the number of bytes a pause is holding back.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.resume.Broadcast()
	p.mu.Unlock()
	p.SetCut(true)
	p.wg.Wait()
}
