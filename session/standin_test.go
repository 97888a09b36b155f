package session

import (
	"errors"
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
		tip, err := full.StandInBranch(full.Leaf())
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
	tip, _ := full.StandInBranch(full.Leaf())
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
