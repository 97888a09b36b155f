package snapshots

import (
	"math/bits"
	"slices"
	"testing"
)

func segs(counts ...int) []bodySeg {
	var out []bodySeg
	at := 0
	for _, c := range counts {
		out = append(out, bodySeg{From: at, Count: c})
		at += c
	}
	return out
}

func counts(ss []bodySeg) []int {
	var out []int
	for _, s := range ss {
		out = append(out, s.Count)
	}
	return out
}

func TestPlanSegments(t *testing.T) {
	tests := []struct {
		name     string
		prev     []bodySeg
		n        int
		keep     []int
		wantFrom int
	}{
		{"first snapshot", nil, 10, nil, 0},
		{"a small tail after a large body", segs(100), 101, []int{100}, 100},
		{"the tail takes in a segment at most twice its size", segs(100, 2), 103, []int{100}, 100},
		{"and then the next, while it is small enough", segs(100, 40, 2), 143, []int{100, 40}, 140},
		{"merges cascade", segs(100, 4, 2), 107, []int{100}, 100},
		{"nothing new: the body as it was", segs(100, 4), 104, []int{100, 4}, 104},
		{"segments past the tree: start over", segs(100), 50, nil, 0},
		{"segments with a gap: start over", []bodySeg{{From: 0, Count: 5}, {From: 6, Count: 5}}, 20, nil, 0},
		{"an empty segment: start over", []bodySeg{{From: 0, Count: 0}}, 20, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, from := planSegments(tt.prev, tt.n, 0)
			if !slices.Equal(counts(keep), tt.keep) || from != tt.wantFrom {
				t.Fatalf("planSegments = %v from %d, want %v from %d", counts(keep), from, tt.keep, tt.wantFrom)
			}
		})
	}
}

// Over a session's life, with a snapshot every 1000 entries, an entry is
// encoded O(log n) times and a body has O(log n) segments — where whole
// bodies were n/1000/2 encodings an entry (100 at 200,000 entries).
func TestPlanSegmentsStaysLogarithmic(t *testing.T) {
	const every, total = 1000, 200_000
	var prev []bodySeg
	encoded, most := 0, 0
	for n := every; n <= total; n += every {
		keep, from := planSegments(prev, n, 0)
		encoded += n - from
		prev = append(keep, bodySeg{From: from, Count: n - from})
		most = max(most, len(prev))
		if !contiguous(prev) || segsEnd(prev) != n {
			t.Fatalf("at %d: segments %v", n, counts(prev))
		}
	}
	logn := bits.Len(total / every) // 8
	if perEntry := float64(encoded) / total; perEntry > float64(logn) {
		t.Errorf("each entry encoded %.1f times on average, want at most %d (log2 of the snapshots)", perEntry, logn)
	}
	if most > 2*logn {
		t.Errorf("a body had %d segments, want at most %d", most, 2*logn)
	}
	t.Logf("%d entries, a snapshot every %d: each encoded %.2f times, at most %d segments", total, every, float64(encoded)/total, most)
}
