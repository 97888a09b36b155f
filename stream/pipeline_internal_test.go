package stream

import (
	"testing"
	"time"
)

// An atomic batch costs the server milliseconds whatever its size: the
// pipeline sends waiting entries as one only when they are enough to pay
// for it, by the costs it has seen, and tries its first batch at 16.
func TestPipelineBatchSize(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name          string
		single, batch time.Duration
		queued, want  int
	}{
		{"nothing", 0, 0, 0, 0},
		{"one alone", 300 * time.Microsecond, 3 * ms, 1, 1},
		{"costs unknown, few waiting: one", 0, 0, 15, 1},
		{"costs unknown, enough waiting: a batch", 0, 0, 16, 16},
		{"two cost less alone than a batch", 300 * time.Microsecond, 3 * ms, 2, 1},
		{"nine still do", 300 * time.Microsecond, 3 * ms, 9, 1},
		{"ten pay for the batch", 300 * time.Microsecond, 3 * ms, 10, 10},
		{"cheap batches are used at two", 300 * time.Microsecond, 500 * time.Microsecond, 2, 2},
		{"a batch holds at most MaxBatch", 300 * time.Microsecond, 3 * ms, 5000, MaxBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pipeline{single: tt.single, batch: tt.batch}
			if got := p.batchSize(tt.queued); got != tt.want {
				t.Fatalf("batchSize(%d) with single %v, batch %v = %d, want %d", tt.queued, tt.single, tt.batch, got, tt.want)
			}
		})
	}
	p := &Pipeline{}
	p.learn(1, 4*ms)
	p.learn(1, 0)
	p.learn(5, 8*ms)
	if p.single != 3*ms || p.batch != 8*ms {
		t.Fatalf("learnt single %v batch %v, want 3ms (a moving average) and 8ms", p.single, p.batch)
	}
}
