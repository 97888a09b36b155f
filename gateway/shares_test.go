package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A turn given back goes to the waiter whose tenant holds the fewest,
// before one that came first; no tenant or user passes its share; a
// waiter that gave up is not handed a turn.
func TestSharesAreFair(t *testing.T) {
	s := newShares(3, 2, 2)
	ctx := context.Background()
	take := func(tenant, user string) func() {
		t.Helper()
		r, refused, err := s.acquire(ctx, tenant, tenant+"/"+user, 0)
		if err != nil || refused != nil {
			t.Fatalf("%s/%s got no turn: %v %+v", tenant, user, err, refused)
		}
		return r
	}
	a1, _ := take("a", "u"), take("a", "v")
	c1 := take("c", "w")
	// The node's turns are all taken: a's third is its own share's
	// refusal; others wait.
	if _, refused, _ := s.acquire(ctx, "a", "a/x", 0); refused == nil || refused.own != "this tenant's" {
		t.Fatalf("a's third turn: %+v", refused)
	}
	got := make(chan string, 2)
	wait := func(tenant string) {
		r, refused, err := s.acquire(ctx, tenant, tenant+"/z", 5*time.Second)
		if err == nil && refused == nil {
			got <- tenant
			r()
		}
	}
	go wait("c") // c, which holds one, asks first
	waiting(t, s, 1)
	go wait("b") // b, which holds none, asks second
	waiting(t, s, 2)
	a1()
	if first := <-got; first != "b" {
		t.Fatalf("the turn a gave back went to %s, not to b (which held none)", first)
	}
	c1()
	if second := <-got; second != "c" {
		t.Fatalf("then %s", second)
	}
	// A waiter that gave up holds nothing.
	s2 := newShares(1, 1, 1)
	r, _, _ := s2.acquire(ctx, "a", "a/u", 0)
	if _, refused, _ := s2.acquire(ctx, "b", "b/u", 10*time.Millisecond); refused == nil || refused.own != "" {
		t.Fatalf("b, when every turn is a's: %+v (its refusal must not name a's share)", refused)
	}
	r()
	if s2.used != 0 || len(s2.waiting) != 0 {
		t.Fatalf("after giving up: %d used, %d waiting", s2.used, len(s2.waiting))
	}
}

// waiting waits until n callers wait for a turn of s.
func waiting(t *testing.T, s *shares, n int) {
	t.Helper()
	sessiontest.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.waiting) != n {
			return fmt.Errorf("%d waiting, want %d", len(s.waiting), n)
		}
		return nil
	})
}
