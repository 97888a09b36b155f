package service

import (
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps a token bucket per client and one for the tenant.
type limiter struct {
	l       Limits
	tenant  *rate.Limiter
	mu      sync.Mutex
	clients map[string]*client
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

// maxClients bounds the buckets kept; idle ones are dropped past it.
const maxClients = 10000

func newLimiter(l Limits) *limiter {
	return &limiter{l: l, tenant: rate.NewLimiter(rate.Limit(l.TenantRate), l.TenantBurst), clients: map[string]*client{}}
}

// allow takes a token for key and for the tenant, or says how long to wait.
func (x *limiter) allow(key string) (time.Duration, bool) {
	now := time.Now()
	x.mu.Lock()
	c := x.clients[key]
	if c == nil {
		if len(x.clients) >= maxClients {
			x.sweep(now)
		}
		c = &client{lim: rate.NewLimiter(rate.Limit(x.l.Rate), x.l.Burst)}
		x.clients[key] = c
	}
	c.seen = now
	x.mu.Unlock()
	r := c.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	t := x.tenant.ReserveN(now, 1)
	if d := t.DelayFrom(now); d > 0 {
		t.CancelAt(now)
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// sweep drops buckets idle long enough to be full again.
func (x *limiter) sweep(now time.Time) {
	idle := time.Duration(float64(x.l.Burst)/x.l.Rate*float64(time.Second)) + time.Second
	for k, c := range x.clients {
		if now.Sub(c.seen) > idle {
			delete(x.clients, k)
		}
	}
}

// clientOf names the client of a request by its reply subject without the
// last token: nats.go and the nats CLI reply to _INBOX.<connection>.<n>,
// so a connection is one client.
func clientOf(reply string) string {
	if i := strings.LastIndexByte(reply, '.'); i > 0 {
		return reply[:i]
	}
	return reply
}
