package cluster

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// linkLog is an edge server's logger: it keeps the last error the hub
// answered the link with (a refused sign-in: the edge revoked, or its
// credentials wrong), which the server only logs, and passes every line
// on to the server's own logger, if it has one.
type linkLog struct {
	next server.Logger // nil: the server logs nothing

	mu  sync.Mutex
	err string
	at  time.Time
}

func (l *linkLog) Noticef(format string, v ...any) {
	if l.next != nil {
		l.next.Noticef(format, v...)
	}
}

func (l *linkLog) Warnf(format string, v ...any) {
	if l.next != nil {
		l.next.Warnf(format, v...)
	}
}

func (l *linkLog) Fatalf(format string, v ...any) {
	if l.next != nil {
		l.next.Fatalf(format, v...)
	}
}

func (l *linkLog) Debugf(format string, v ...any) {
	if l.next != nil {
		l.next.Debugf(format, v...)
	}
}

func (l *linkLog) Tracef(format string, v ...any) {
	if l.next != nil {
		l.next.Tracef(format, v...)
	}
}

func (l *linkLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	// The hub's -ERR on a leafnode connection: "Leafnode Error 'Authorization Violation'".
	if i := strings.Index(msg, "Leafnode Error "); i >= 0 {
		l.mu.Lock()
		l.err, l.at = strings.Trim(msg[i+len("Leafnode Error "):], `'" `), time.Now()
		l.mu.Unlock()
	}
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

// last is the last error the hub answered the link with, and when.
func (l *linkLog) last() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err, l.at
}

// LinkRefused says why the hub refused this edge's link, when it did and
// the link has not been up since (an edge revoked at the hub, or signing
// in with wrong credentials); "" otherwise.
func (n *Node) LinkRefused() string {
	if n.linkLog == nil || n.Linked() {
		return ""
	}
	err, at := n.linkLog.last()
	if err == "" || time.Since(at) > 2*time.Minute {
		return ""
	}
	return err
}
