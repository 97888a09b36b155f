package gateway

import (
	"context"
	"sync"
	"time"
)

// shares hands out a node-wide number of turns (the replies the gateway
// puts together, each up to maxAssembled bytes in memory) so that no
// tenant, and no user within one, can take them all: a tenant holds at
// most perTenant at once, a user perUser. A turn given back goes to the
// waiter whose tenant holds the fewest (the first come among equals), so
// a tenant that reads little is served before one that reads a lot.
type shares struct {
	max, perTenant, perUser int

	mu       sync.Mutex
	used     int
	byTenant map[string]int
	byUser   map[string]int
	waiting  []*shareWaiter // in the order they came
}

type shareWaiter struct {
	tenant, user string
	granted      chan struct{} // closed when the turn is the waiter's
}

func newShares(max, perTenant, perUser int) *shares {
	return &shares{max: max, perTenant: min(perTenant, max), perUser: min(perUser, max), byTenant: map[string]int{}, byUser: map[string]int{}}
}

// shareRefusal says why a caller got no turn within its wait: its own
// user's or tenant's share stayed taken (own says whose), or none came
// (which says nothing of who holds them).
type shareRefusal struct{ own string }

// acquire waits up to wait for a turn of tenant and user (user names the
// tenant's user: "tenant/name").
func (s *shares) acquire(ctx context.Context, tenant, user string, wait time.Duration) (release func(), refused *shareRefusal, err error) {
	s.mu.Lock()
	w := &shareWaiter{tenant: tenant, user: user, granted: make(chan struct{})}
	if s.used < s.max && s.may(w) && !s.preferred(tenant) {
		s.take(tenant, user)
		s.mu.Unlock()
		return s.releaser(tenant, user), nil, nil
	}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-w.granted:
		return s.releaser(tenant, user), nil, nil
	case <-timer.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted: // given a turn as the wait ended: give it back
		s.give(tenant, user)
	default:
		s.drop(w)
	}
	switch {
	case err != nil:
		return nil, nil, err
	case s.byUser[user] >= s.perUser:
		return nil, &shareRefusal{own: "this user's"}, nil
	case s.byTenant[tenant] >= s.perTenant:
		return nil, &shareRefusal{own: "this tenant's"}, nil
	}
	return nil, &shareRefusal{}, nil
}

// preferred reports whether a waiter that may take a turn has a claim
// before tenant's: its tenant holds fewer turns. (Under mu.)
func (s *shares) preferred(tenant string) bool {
	for _, w := range s.waiting {
		if s.may(w) && s.byTenant[w.tenant] < s.byTenant[tenant] {
			return true
		}
	}
	return false
}

func (s *shares) may(w *shareWaiter) bool {
	return s.byTenant[w.tenant] < s.perTenant && s.byUser[w.user] < s.perUser
}

func (s *shares) take(tenant, user string) {
	s.used++
	s.byTenant[tenant]++
	s.byUser[user]++
}

func (s *shares) releaser(tenant, user string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.give(tenant, user)
		})
	}
}

// give takes a turn back and hands it on to the waiter with the best
// claim. (Under mu.)
func (s *shares) give(tenant, user string) {
	s.used--
	if s.byTenant[tenant]--; s.byTenant[tenant] <= 0 {
		delete(s.byTenant, tenant)
	}
	if s.byUser[user]--; s.byUser[user] <= 0 {
		delete(s.byUser, user)
	}
	for s.used < s.max {
		var best *shareWaiter
		for _, w := range s.waiting {
			if s.may(w) && (best == nil || s.byTenant[w.tenant] < s.byTenant[best.tenant]) {
				best = w
			}
		}
		if best == nil {
			return
		}
		s.drop(best)
		s.take(best.tenant, best.user)
		close(best.granted)
	}
}

func (s *shares) drop(w *shareWaiter) {
	for i, x := range s.waiting {
		if x == w {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			return
		}
	}
}
