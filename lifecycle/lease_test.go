package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// One holder at a time; a released lease is free; a lapsed one is free,
// and its old holder's renewal fails.
func TestLease(t *testing.T) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	kv, err := lifecycle.OpenLeases(ctx, js, 2*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lifecycle.Acquire(ctx, kv, "job", "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.Acquire(ctx, kv, "job", "node-b"); !errors.Is(err, lifecycle.ErrLeaseHeld) {
		t.Fatalf("a second holder: %v", err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := lifecycle.Acquire(ctx, kv, "job", "node-b")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// b stops renewing: the lease lapses and c takes it.
	var c *lifecycle.Lease
	sessiontest.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		c, err = lifecycle.Acquire(ctx, kv, "job", "node-c")
		return err
	})
	if err := b.Renew(ctx); !errors.Is(err, lifecycle.ErrLeaseHeld) {
		t.Fatalf("a lapsed holder renewed: %v", err)
	}
	c.Release(ctx)
}

// A scheduled run does nothing while another node holds the lease, and
// the policy's work once it may.
func TestScheduledTakesTheLease(t *testing.T) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	kv, err := lifecycle.OpenLeases(ctx, js, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	repo := repos(t)["jetstream"]
	aged(t, repo, 4)
	pol := lifecycle.Policy{MaxSessions: 1}
	other, err := lifecycle.Acquire(ctx, kv, lifecycle.RetentionJob, "other-node")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := lifecycle.Scheduled(ctx, repo, kv, "this-node", pol, nil); !errors.Is(err, lifecycle.ErrLeaseHeld) || len(out) != 0 {
		t.Fatalf("while held elsewhere: %v, %v", out, err)
	}
	other.Release(ctx)
	out, err := lifecycle.Scheduled(ctx, repo, kv, "this-node", pol, nil)
	if err != nil || len(out) != 1 { // r3 kept as the newest, r1 and r2 protected: r0 goes
		t.Fatalf("with the lease: %+v, %v", out, err)
	}
	if _, err := lifecycle.Acquire(ctx, kv, lifecycle.RetentionJob, "other-node"); err != nil {
		t.Fatalf("the run did not release its lease: %v", err)
	}
}
