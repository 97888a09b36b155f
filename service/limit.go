package service

import (
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/ratelimit"
)

// limiter keeps a token bucket per client and one for the tenant, and
// one of the bytes the tenant writes.
type limiter struct {
	clients *ratelimit.Keyed
	tenant  *rate.Limiter
	written *rate.Limiter
}

func newLimiter(l Limits) *limiter {
	return &limiter{clients: ratelimit.NewKeyed(l.Rate, l.Burst), tenant: rate.NewLimiter(rate.Limit(l.TenantRate), l.TenantBurst),
		written: rate.NewLimiter(rate.Limit(l.TenantWriteBytes), l.TenantWriteBurst)}
}

// writes are the operations whose bodies are stored: their bytes count
// against the tenant's write rate.
var writes = map[string]bool{api.OpAppend: true, api.OpUpload: true, api.OpPutBlob: true, api.OpLivePut: true, api.OpFork: true}

// allowBytes takes n bytes of the tenant's write rate (a body larger than
// the burst takes the whole burst), or says how long to wait.
func (x *limiter) allowBytes(n int) (time.Duration, bool) {
	now := time.Now()
	return ratelimit.Take(x.written.ReserveN(now, min(n, x.written.Burst())), now)
}

// charge takes n bytes the tenant wrote other than by a request's body
// (a fork's copy) from its write rate, whatever the wait: the tenant's
// writes that follow wait until they are paid (allowBytes).
func (x *limiter) charge(n int) {
	now := time.Now()
	for n > 0 {
		k := min(n, x.written.Burst())
		x.written.ReserveN(now, k)
		n -= k
	}
}

// allow takes a token for key and for the tenant, or says how long to wait.
func (x *limiter) allow(key string) (time.Duration, bool) {
	now := time.Now()
	r := x.clients.Reserve(key, now)
	if d, ok := ratelimit.Take(r, now); !ok {
		return d, false
	}
	if d, ok := ratelimit.Take(x.tenant.ReserveN(now, 1), now); !ok {
		r.CancelAt(now) // refused: the client's token goes back
		return d, false
	}
	return 0, true
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
