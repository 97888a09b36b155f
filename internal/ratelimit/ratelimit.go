// Package ratelimit keeps token buckets per client for the service and
// the gateway.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MaxKeys bounds the buckets a Keyed keeps.
const MaxKeys = 10000

// Keyed keeps a token bucket per key. Past MaxKeys, buckets idle long
// enough to have refilled are dropped (a new one starts full: nothing is
// lost); if every bucket is busy they all start over — a burst for each,
// never an unbounded map.
type Keyed struct {
	rate  rate.Limit
	burst int
	idle  time.Duration

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewKeyed makes buckets of perSecond tokens a second, burst at most.
func NewKeyed(perSecond float64, burst int) *Keyed {
	return &Keyed{
		rate: rate.Limit(perSecond), burst: burst, m: map[string]*bucket{},
		idle: time.Duration(float64(burst)/perSecond*float64(time.Second)) + time.Second,
	}
}

// Reserve takes a token from key's bucket at now; see Take.
func (k *Keyed) Reserve(key string, now time.Time) *rate.Reservation {
	k.mu.Lock()
	b := k.m[key]
	if b == nil {
		if len(k.m) >= MaxKeys {
			k.sweep(now)
		}
		b = &bucket{lim: rate.NewLimiter(k.rate, k.burst)}
		k.m[key] = b
	}
	b.seen = now
	k.mu.Unlock()
	return b.lim.ReserveN(now, 1)
}

func (k *Keyed) sweep(now time.Time) {
	for key, b := range k.m {
		if now.Sub(b.seen) > k.idle {
			delete(k.m, key)
		}
	}
	if len(k.m) >= MaxKeys {
		clear(k.m)
	}
}

// Take keeps r when its token is there at now; otherwise it gives the
// token back and says how long until one would be.
func Take(r *rate.Reservation, now time.Time) (time.Duration, bool) {
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}
