package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

func TestKeyed(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewKeyed(2, 3)
	for i := range 3 {
		if _, ok := Take(k.Reserve("a", now), now); !ok {
			t.Fatalf("token %d of a burst of 3 refused", i+1)
		}
	}
	d, ok := Take(k.Reserve("a", now), now)
	if ok || d != 500*time.Millisecond {
		t.Fatalf("past the burst: ok %v, wait %v; want refused, 500ms", ok, d)
	}
	// A refusal gives its token back: the wait does not grow.
	if d2, _ := Take(k.Reserve("a", now), now); d2 != d {
		t.Fatalf("second refusal waits %v, want %v", d2, d)
	}
	if _, ok := Take(k.Reserve("b", now), now); !ok {
		t.Fatal("another key shares a's bucket")
	}
	if _, ok := Take(k.Reserve("a", now.Add(d)), now.Add(d)); !ok {
		t.Fatal("refused after the wait it gave")
	}
}

func TestKeyedStaysBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewKeyed(1, 1)
	for i := range 2 * MaxKeys {
		k.Reserve(fmt.Sprint(i), now) // all busy: nothing idle to sweep
	}
	if len(k.m) > MaxKeys {
		t.Fatalf("%d buckets kept, more than %d", len(k.m), MaxKeys)
	}
	// Idle ones go first: a busy bucket survives a sweep.
	k = NewKeyed(1, 1)
	for i := range MaxKeys {
		k.Reserve(fmt.Sprint(i), now)
	}
	later := now.Add(time.Hour)
	k.Reserve("busy", later)
	k.Reserve("new", later)
	if _, ok := k.m["busy"]; !ok || len(k.m) != 2 {
		t.Fatalf("after a sweep: %d buckets, busy kept %v", len(k.m), ok)
	}
}
