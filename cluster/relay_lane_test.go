package cluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/time/rate"
)

func TestFrameOf(t *testing.T) {
	for _, c := range []struct {
		line    string
		subject string
		size    int
		ok      bool
	}{
		{"LMSG a.b 5\r\n", "a.b", 7, true},
		{"LMSG a.b _INBOX.x 5\r\n", "a.b", 7, true},
		{"LMSG a.b + _INBOX.x q1 5\r\n", "a.b", 7, true},
		{"HMSG $JS.S.x $JS.FC.y 10 25\r\n", "$JS.S.x", 27, true},
		{"PING\r\n", "", 0, true},
		{"LS+ acme $JS.API.>\r\n", "", 0, true},
		{"\r\n", "", 0, true},
		{"LMSG a.b many\r\n", "", 0, false},
		{"LMSG a.b -1\r\n", "", 0, false},
		{"\xff\x06\x00\x00sNaPpY", "", 0, false}, // a compressed stream
	} {
		subject, size, ok := frameOf([]byte(c.line))
		if subject != c.subject || size != c.size || ok != c.ok {
			t.Errorf("%q: %q %d %v, want %q %d %v", c.line, subject, size, ok, c.subject, c.size, c.ok)
		}
	}
}

// Small frames go ahead of the bulk, but never ahead of a bulk frame of
// their own subject (a consumer's heartbeat stays behind its messages).
func TestLaneLetsSmallFramesAhead(t *testing.T) {
	var carried atomic.Int64
	l := newLane(context.Background(), rate.NewLimiter(rate.Inf, 1), &carried)
	bulk := "LMSG $JS.S.a 2000\r\n" + strings.Repeat("x", 2000) + "\r\n"
	l.read(strings.NewReader(bulk + "LMSG $JS.S.a 0\r\n\r\n" + "LMSG _INBOX.b 2\r\nok\r\n" + "PING\r\n"))
	var order []string
	for {
		f, ok := l.next()
		if !ok {
			break
		}
		fs := append(strings.Fields(string(f.frame)), "")
		order = append(order, fs[0]+" "+fs[1])
	}
	want := []string{"LMSG _INBOX.b", "PING ", "LMSG $JS.S.a", "LMSG $JS.S.a"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("frames went %q, want %q", order, want)
	}
}
