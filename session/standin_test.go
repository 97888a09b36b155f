package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// A stand-in made from a leaf's context branch, then given the entries
// appended after it, gives for each entry it answers the context the
// whole session gives, and refuses the entries it could not answer for.
func TestStandInBuildsTheSameContext(t *testing.T) {
	answered, refused, shorter := 0, 0, 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 11))
		h, all := randomSession(r, 20+r.IntN(200))
		at := 1 + r.IntN(len(all)-1) // the snapshot: entries before at
		full := NewTree(h)
		for _, e := range all[:at] {
			if err := full.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
		tip, _, err := full.StandInBranch(full.Leaf(), len(all))
		if err != nil {
			t.Fatal(err)
		}
		if len(tip) < len(all[:at]) {
			shorter++
		}
		s, err := NewStandIn(h, tip)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if s.Tree().Leaf() != full.Leaf() {
			t.Fatalf("seed %d: stand-in leaf %s, want %s", seed, s.Tree().Leaf(), full.Leaf())
		}
		check := func(leaf string) {
			got, err := s.ContextBranch(leaf)
			if err != nil {
				t.Fatalf("seed %d, leaf %s: %v", seed, leaf, err)
			}
			branch, err := full.Branch(leaf)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := BuildContext(got, ContextOptions{}), BuildContext(branch, ContextOptions{}); !reflect.DeepEqual(g, w) {
				t.Fatalf("seed %d, leaf %s: the stand-in builds another context:\n got %+v\nwant %+v", seed, leaf, g, w)
			}
			answered++
		}
		check(full.Leaf())
		for _, e := range all[at:] {
			err := s.Apply(e)
			if err := full.Apply(e); err != nil {
				t.Fatal(err)
			}
			if errors.Is(err, ErrBeyondStandIn) {
				refused++
				break // an open reads the whole session from here
			}
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if s.Tree().Leaf() != full.Leaf() {
				t.Fatalf("seed %d: stand-in leaf %s after %s, want %s", seed, s.Tree().Leaf(), e.ID, full.Leaf())
			}
			check(e.ID)
		}
	}
	if refused == 0 || shorter == 0 || answered < 1000 {
		t.Fatalf("%d answered, %d refused, %d tips shorter than their session: the sessions do not try the stand-in", answered, refused, shorter)
	}
}

// A stand-in answers only for its leaf and what it took since.
func TestStandInAnswersItsLeavesOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h, all := randomSession(r, 80)
	full := NewTree(h)
	for _, e := range all {
		_ = full.Apply(e)
	}
	tip, _, _ := full.StandInBranch(full.Leaf(), len(all))
	s, err := NewStandIn(h, tip)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Answers(full.Leaf()) {
		t.Fatal("the stand-in does not answer its leaf")
	}
	for _, e := range tip[:len(tip)-1] {
		if s.Answers(e.ID) {
			t.Fatalf("the stand-in answers %s, above its leaf", e.ID)
		}
		if _, err := s.ContextBranch(e.ID); !errors.Is(err, ErrBeyondStandIn) {
			t.Fatalf("context of %s: %v, want ErrBeyondStandIn", e.ID, err)
		}
	}
}

// StandInBranch stops at max entries, and says so, however long the
// branch above.
func TestStandInBranchStopsAtMax(t *testing.T) {
	h := Header{Version: CurrentVersion, ID: "long", Timestamp: "2026-01-01T00:00:00.000Z"}
	tr := NewTree(h)
	for i := range 100 {
		e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("e%03d", i), ParentID: tr.Leaf(), Timestamp: "2026-01-01T00:00:01.000Z",
			Message: &Message{Role: RoleUser, Content: TextContent("u"), Timestamp: 1}}
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		max    int
		wantOK bool
	}{{99, false}, {10, false}, {100, true}, {1000, true}} {
		branch, ok, err := tr.StandInBranch(tr.Leaf(), c.max)
		if err != nil || ok != c.wantOK || (ok && len(branch) != 100) || (!ok && branch != nil) {
			t.Fatalf("max %d: %d entries, ok %v, %v; want ok %v", c.max, len(branch), ok, err, c.wantOK)
		}
	}
}
