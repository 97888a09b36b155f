package cluster

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// A lane carries one direction of a bandwidth-bound link, frame by frame
// of the NATS protocol (the link is not compressed: applyLeaf). It reads
// what its side sends at once, into a queue, so that the server never
// waits on a socket the bound keeps full (it closed the link as a slow
// consumer, and the sync began again), and it lets the protocol's small
// frames — pings, interest, the JetStream API's requests and replies,
// flow control — go ahead of the bulk of the sync, which waits for the
// bucket. A frame never passes a bulk frame of its own subject (a
// consumer's heartbeat its messages), so each subject keeps its order. A
// lane that meets bytes it cannot read as the protocol carries the rest
// as they come, in order.
//
// Before, control waited behind whatever the sync had queued: an edge at
// 3,000 B/s moved nothing in two minutes, its link request timing out
// (issue 68, item 6).
type lane struct {
	lim     *rate.Limiter
	ctx     context.Context
	carried *atomic.Int64 // bytes written, the relay's count

	mu        sync.Mutex
	cond      *sync.Cond
	urgent    [][]byte
	bulk      []queued
	bulkBytes int
	bySubject map[string]int // bulk frames queued, by subject
	ended     bool           // the reader has stopped: write what is queued, then stop
}

type queued struct {
	subject string
	frame   []byte
	waits   bool // takes from the bucket before it goes (a bulk frame)
}

const (
	// bulkFrame is the size from which a message waits for the bucket; a
	// smaller one goes ahead (and is counted all the same).
	bulkFrame = 1 << 10
	// maxQueued bounds the bulk a lane holds: past it, the lane reads no
	// more (JetStream's flow control keeps a sync's well under it).
	maxQueued = 32 << 20
	// maxLine bounds a protocol line (a subject and its reply: a few
	// hundred bytes; INFO and CONNECT a few kilobytes).
	maxLine = 64 << 10
)

func newLane(ctx context.Context, lim *rate.Limiter, carried *atomic.Int64) *lane {
	l := &lane{lim: lim, ctx: ctx, carried: carried, bySubject: map[string]int{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// read takes frames from src until it ends, then ends the lane.
func (l *lane) read(src io.Reader) {
	defer l.end()
	br := bufio.NewReaderSize(src, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if len(line) > 0 {
				l.push(queued{frame: bytes.Clone(line), waits: true})
			}
			if err == bufio.ErrBufferFull {
				l.raw(br)
			}
			return
		}
		subject, size, ok := frameOf(line)
		if !ok {
			l.push(queued{frame: bytes.Clone(line), waits: true})
			l.raw(br)
			return
		}
		frame := make([]byte, len(line)+size)
		copy(frame, line)
		if _, err := io.ReadFull(br, frame[len(line):]); err != nil {
			return
		}
		l.push(queued{subject: subject, frame: frame, waits: size >= bulkFrame})
	}
}

// raw carries the rest of src as it comes, in order, every byte waiting
// for the bucket.
func (l *lane) raw(src io.Reader) {
	buf := make([]byte, relayChunk)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.push(queued{subject: "\x00raw", frame: bytes.Clone(buf[:n]), waits: true})
		}
		if err != nil {
			return
		}
	}
}

// frameOf reads a protocol line: the subject of a message and the bytes
// that follow the line (its payload and CRLF); ok is false for a line
// that is not the protocol's.
func frameOf(line []byte) (subject string, size int, ok bool) {
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return "", 0, true // a bare CRLF
	}
	switch string(bytes.ToUpper(fields[0])) {
	case "LMSG", "HMSG", "RMSG", "MSG", "PUB", "HPUB":
		if len(fields) < 3 {
			return "", 0, false
		}
		n, err := strconv.Atoi(string(fields[len(fields)-1]))
		if err != nil || n < 0 || n > 64<<20 {
			return "", 0, false
		}
		return string(fields[1]), n + 2, true
	case "INFO", "CONNECT", "PING", "PONG", "+OK", "-ERR", "LS+", "LS-", "A+", "A-", "SUB", "UNSUB":
		return "", 0, true
	}
	return "", 0, false
}

// push queues f: ahead of the bulk when it is small and no bulk frame of
// its subject waits, behind it otherwise. It waits while the bulk queued
// is over maxQueued.
func (l *lane) push(f queued) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.bulkBytes > maxQueued && l.ctx.Err() == nil {
		l.cond.Wait()
	}
	if l.ctx.Err() != nil {
		return // the link is gone: nothing more is written
	}
	if !f.waits && (f.subject == "" || l.bySubject[f.subject] == 0) {
		l.urgent = append(l.urgent, f.frame)
	} else {
		l.bulk = append(l.bulk, f)
		l.bulkBytes += len(f.frame)
		l.bySubject[f.subject]++
	}
	l.cond.Broadcast()
}

// end marks the reader stopped.
func (l *lane) end() {
	l.mu.Lock()
	l.ended = true
	l.cond.Broadcast()
	l.mu.Unlock()
}

// next is the next frame to write: an urgent one first; ok is false once
// the lane has ended and is empty, or its context is done.
func (l *lane) next() (f queued, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.urgent) == 0 && len(l.bulk) == 0 && !l.ended && l.ctx.Err() == nil {
		l.cond.Wait()
	}
	switch {
	case l.ctx.Err() != nil:
		return f, false
	case len(l.urgent) > 0:
		f.frame = l.urgent[0]
		l.urgent[0] = nil
		l.urgent = l.urgent[1:]
		return f, true
	case len(l.bulk) > 0:
		f = l.bulk[0]
		l.bulk[0] = queued{}
		l.bulk = l.bulk[1:]
		l.bulkBytes -= len(f.frame)
		if l.bySubject[f.subject]--; l.bySubject[f.subject] == 0 {
			delete(l.bySubject, f.subject)
		}
		l.cond.Broadcast()
		return f, true
	}
	return f, false // ended and empty
}

// write sends the lane's frames to dst until it ends: a bulk frame in
// pieces as the bucket allows, a small one at once (counted all the same:
// the bucket may go into debt, which the bulk then waits out).
func (l *lane) write(dst io.Writer) {
	for {
		f, ok := l.next()
		if !ok {
			return
		}
		for b := f.frame; len(b) > 0; {
			n := min(len(b), relayChunk)
			if f.waits {
				if l.lim.WaitN(l.ctx, n) != nil {
					return
				}
			} else {
				l.lim.ReserveN(time.Now(), n)
			}
			if _, err := dst.Write(b[:n]); err != nil {
				return
			}
			l.carried.Add(int64(n))
			b = b[n:]
		}
	}
}

// wake lets a lane waiting on its context see it done.
func (l *lane) wake() {
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
}
