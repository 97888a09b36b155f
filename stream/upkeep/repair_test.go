package upkeep

import (
	"testing"
	"time"
)

// TestRepairPlanner walks replicas through the planner's rules, one
// observation per step.
func TestRepairPlanner(t *testing.T) {
	cfg := RepairConfig{Every: time.Second, StuckAfter: 10 * time.Second, DeadAfter: 30 * time.Second}
	type step struct {
		at     time.Duration
		view   streamView
		expect []string // "kind peer" of the repairs due
	}
	cur := func(name string) peerView { return peerView{name: name, current: true} }
	lag := func(name string, n uint64) peerView { return peerView{name: name, lag: n} }
	off := func(name string) peerView { return peerView{name: name, offline: true} }
	view := func(leader string, seq uint64, peers ...peerView) streamView {
		return streamView{stream: "S", leader: leader, lastSeq: seq, peers: peers}
	}
	s := time.Second
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"a current replica is left alone", []step{
			{0, view("a", 10, cur("b"), cur("c")), nil},
			{60 * s, view("a", 1000, cur("b"), cur("c")), nil},
		}},
		{"stuck: a stepdown to a current peer, then a removal", []step{
			{0, view("a", 10, lag("b", 5), cur("c")), nil},
			{9 * s, view("a", 20, lag("b", 15), cur("c")), nil},
			{10 * s, view("a", 30, lag("b", 25), cur("c")), []string{"stepdown b"}},
			// The new leader (c) still sees b behind: removed a window on.
			{12 * s, view("c", 40, lag("b", 35), cur("a")), nil},
			{20 * s, view("c", 50, lag("b", 45), cur("a")), []string{"peer-remove b"}},
		}},
		{"catching up, however slowly, is not stuck", []step{
			{0, view("a", 10, lag("b", 50), cur("c")), nil},
			{8 * s, view("a", 20, lag("b", 40), cur("c")), nil},
			{16 * s, view("a", 30, lag("b", 30), cur("c")), nil},
			{24 * s, view("a", 40, lag("b", 20), cur("c")), nil},
		}},
		{"a leader taking nothing new has nothing to catch up on", []step{
			{0, view("a", 10, lag("b", 5), cur("c")), nil},
			{20 * s, view("a", 10, lag("b", 5), cur("c")), nil},
		}},
		{"caught up in time: the window starts over", []step{
			{0, view("a", 10, lag("b", 5), cur("c")), nil},
			{9 * s, view("a", 20, cur("b"), cur("c")), nil},
			{12 * s, view("a", 30, lag("b", 5), cur("c")), nil},
			{19 * s, view("a", 40, lag("b", 15), cur("c")), nil},
		}},
		{"no current peer to lead: removed at once", []step{
			{0, view("a", 10, lag("b", 5), lag("c", 5)), nil},
			{10 * s, view("a", 30, lag("b", 25), lag("c", 25)), []string{"peer-remove b", "peer-remove c"}},
		}},
		{"a leader change while behind counts as the stepdown", []step{
			{0, view("a", 10, lag("b", 5), cur("c")), nil},
			{5 * s, view("c", 20, lag("b", 15), cur("a")), nil},
			{10 * s, view("c", 30, lag("b", 25), cur("a")), []string{"peer-remove b"}},
		}},
		{"dead: removed after DeadAfter, not after StuckAfter", []step{
			{0, view("a", 10, off("b"), cur("c")), nil},
			{15 * s, view("a", 100, off("b"), cur("c")), nil},
			{30 * s, view("a", 200, off("b"), cur("c")), []string{"peer-remove b"}},
			{31 * s, view("a", 210, off("b"), cur("c")), nil},
		}},
		{"a replaced peer is forgotten", []step{
			{0, view("a", 10, off("b"), cur("c")), nil},
			{30 * s, view("a", 20, off("b"), cur("c")), []string{"peer-remove b"}},
			{31 * s, view("a", 30, lag("d", 30), cur("c")), nil},
			{40 * s, view("a", 40, lag("d", 10), cur("c")), nil},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newRepairPlanner(cfg)
			for i, st := range c.steps {
				var got []string
				for _, a := range p.observe(st.at, st.view) {
					got = append(got, a.kind+" "+a.peer)
					if a.kind == repairStepDown && a.to == "" {
						t.Errorf("step %d: a stepdown without a peer to lead", i)
					}
				}
				if len(got) != len(st.expect) {
					t.Fatalf("step %d (at %v): repairs %v, want %v", i, st.at, got, st.expect)
				}
				for j := range got {
					if got[j] != st.expect[j] {
						t.Fatalf("step %d (at %v): repairs %v, want %v", i, st.at, got, st.expect)
					}
				}
			}
		})
	}
	if err := (RepairConfig{Every: time.Second, StuckAfter: time.Millisecond, DeadAfter: time.Minute}).Validate(); err == nil {
		t.Error("StuckAfter shorter than Every accepted")
	}
	if err := (RepairConfig{Every: time.Second, DeadAfter: -time.Minute}).Validate(); err == nil {
		t.Error("a negative DeadAfter accepted")
	}
	// 0 is never: neither a stuck nor a dead replica is touched.
	never := RepairConfig{Every: time.Second}
	if err := never.Validate(); err != nil {
		t.Fatal(err)
	}
	p := newRepairPlanner(never)
	for i, at := range []time.Duration{0, time.Hour, 2 * time.Hour} {
		v := streamView{stream: "S", leader: "a", lastSeq: uint64(10 + i), peers: []peerView{lag("b", uint64(5+i)), off("c")}}
		if got := p.observe(at, v); len(got) != 0 {
			t.Fatalf("with both windows 0, at %v: %+v", at, got)
		}
	}
	if err := DefaultRepairConfig().Validate(); err != nil {
		t.Error(err)
	}
}
