package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// An atomic batch costs the server milliseconds whatever its size: waiting
// entries are sent as one only when they are enough to pay for it, by the
// costs seen, and the first batch is tried at firstBatch.
func TestSendCostsBatchSize(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name          string
		single, batch time.Duration
		queued, want  int
	}{
		{"nothing", 0, 0, 0, 0},
		{"one alone", 300 * time.Microsecond, 3 * ms, 1, 1},
		{"costs unknown, few waiting: one", 0, 0, firstBatch - 1, 1},
		{"costs unknown, enough waiting: a batch", 0, 0, firstBatch, firstBatch},
		{"two cost less alone than a batch", 300 * time.Microsecond, 3 * ms, 2, 1},
		{"nine still do", 300 * time.Microsecond, 3 * ms, 9, 1},
		{"ten pay for the batch", 300 * time.Microsecond, 3 * ms, 10, 10},
		{"cheap batches are used at two", 300 * time.Microsecond, 500 * time.Microsecond, 2, 2},
		{"a batch holds at most MaxBatch", 300 * time.Microsecond, 3 * ms, 5000, MaxBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &sendCosts{single: tt.single, batch: tt.batch}
			if got := c.size(tt.queued); got != tt.want {
				t.Fatalf("size(%d) with single %v, batch %v = %d, want %d", tt.queued, tt.single, tt.batch, got, tt.want)
			}
		})
	}
	var c sendCosts
	c.learn(1, 4*ms)
	c.learn(1, 0)
	c.learn(5, 8*ms)
	if c.single != 3*ms || c.batch != 8*ms {
		t.Fatalf("learnt single %v batch %v, want 3ms (a moving average) and 8ms", c.single, c.batch)
	}
}

// A writer faster than the server waits once maxQueued entries wait to be
// sent, and goes on when a send makes room.
func TestPipelineAppendWaitsForRoom(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &Pipeline{wake: make(chan struct{}, 1), ids: map[string]bool{}, changed: make(chan struct{}), ctx: ctx, cancel: cancel}
	p.queue = make([]*session.Entry, maxQueued)
	e := &session.Entry{Type: session.TypeMessage, ID: "next", ParentID: "p", Timestamp: "2026-01-01T00:00:00.000Z",
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("x"), Timestamp: 1}}
	done := make(chan error, 1)
	go func() { done <- p.Append(e) }()
	select {
	case err := <-done:
		t.Fatalf("Append returned (%v) with %d entries waiting", err, maxQueued)
	case <-time.After(100 * time.Millisecond):
	}
	p.mu.Lock()
	p.queue = p.queue[MaxBatch:] // a batch went
	p.notify()
	p.mu.Unlock()
	select {
	case err := <-done:
		if err != nil || len(p.queue) != maxQueued-MaxBatch+1 {
			t.Fatalf("Append = %v, %d waiting", err, len(p.queue))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Append still waits after a send made room")
	}
	// A pipeline whose context ended refuses instead of waiting forever.
	p.queue = make([]*session.Entry, maxQueued)
	cancel()
	e2 := *e
	e2.ID = "later"
	if err := p.Append(&e2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append after the context ended: %v", err)
	}
}
