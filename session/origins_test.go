package session_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// written is one entry and the node it was written on.
type written struct {
	origin string
	e      *session.Entry
}

func userAt(id, parent string, second int) *session.Entry {
	return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: fmt.Sprintf("2026-01-01T00:00:%02d.000Z", second),
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: int64(second)}}
}

// interleave merges logs keeping each one's order, as a node taking in
// several nodes' logs does, in an order r picks.
func interleave(r *rand.Rand, logs ...[]written) []written {
	var out []written
	pos := make([]int, len(logs))
	for {
		var open []int
		for i, l := range logs {
			if pos[i] < len(l) {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		i := open[r.IntN(len(open))]
		out = append(out, logs[i][pos[i]])
		pos[i]++
	}
}

func treeOf(t *testing.T, ws []written) *session.Tree {
	t.Helper()
	tr := session.NewTree(session.Header{Version: 3, ID: "s", Timestamp: "2026-01-01T00:00:00.000Z", Cwd: "/"})
	for _, w := range ws {
		if err := tr.ApplyFrom(w.origin, w.e); err != nil {
			t.Fatalf("apply %s from %q: %v", w.e.ID, w.origin, err)
		}
	}
	return tr
}

// Two nodes write one session while apart, from a shared start: every
// order a node can take their entries in gives the same leaf (the tip of
// the branch written last), and the other branch is told apart.
func TestOriginsAgreeOnTheLeafInAnyOrder(t *testing.T) {
	shared := []written{{"hub", userAt("r", "", 1)}, {"hub", userAt("s1", "r", 2)}}
	cases := []struct {
		name      string
		a, b      []written
		wantLeaf  string
		wantApart []string // origin:leaf
	}{
		{"b writes last", []written{{"a", userAt("a1", "s1", 3)}, {"a", userAt("a2", "a1", 4)}},
			[]written{{"b", userAt("b1", "s1", 5)}}, "b1", []string{"a:a2"}},
		{"a writes last", []written{{"a", userAt("a1", "s1", 3)}, {"a", userAt("a2", "a1", 9)}},
			[]written{{"b", userAt("b1", "s1", 5)}, {"b", userAt("b2", "b1", 6)}}, "a2", []string{"b:b2"}},
		{"same time: the greater name", []written{{"a", userAt("a1", "s1", 7)}},
			[]written{{"b", userAt("b1", "s1", 7)}}, "b1", []string{"a:a1"}},
		{"a moves back after b", []written{{"a", userAt("a1", "s1", 3)}, {"a", &session.Entry{Type: session.TypeLeaf, ID: "m", ParentID: "r", Timestamp: "2026-01-01T00:00:20.000Z"}}},
			[]written{{"b", userAt("b1", "s1", 5)}}, "r", []string{"b:b1"}},
		{"one continues the other", []written{{"a", userAt("a1", "s1", 3)}},
			[]written{{"b", userAt("b1", "a1", 5)}}, "b1", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var leaves = map[string]int{}
			for range 50 {
				var ws []written
				if c.name == "one continues the other" {
					ws = append(append(append([]written(nil), shared...), c.a...), c.b...) // b saw a's entry
				} else {
					ws = append(append([]written(nil), shared...), interleave(r, c.a, c.b)...)
				}
				tr := treeOf(t, ws)
				leaves[tr.Leaf()]++
				var apart []string
				for _, a := range tr.Apart() {
					apart = append(apart, a.Origin+":"+a.Leaf)
				}
				if fmt.Sprint(apart) != fmt.Sprint(c.wantApart) {
					t.Fatalf("apart %v, want %v", apart, c.wantApart)
				}
			}
			if len(leaves) != 1 || leaves[c.wantLeaf] == 0 {
				t.Fatalf("leaves over 50 orders: %v, want %s always", leaves, c.wantLeaf)
			}
		})
	}
}

// One origin, named or not, keeps the last entry's leaf: a session written
// by one node reads as it always did.
func TestOneOriginKeepsTheLastEntry(t *testing.T) {
	for _, origin := range []string{"", "hub"} {
		// Timestamps going back: the last entry is still the leaf.
		ws := []written{{origin, userAt("r", "", 9)}, {origin, userAt("x", "r", 5)}, {origin, userAt("y", "r", 1)}}
		tr := treeOf(t, ws)
		if tr.Leaf() != "y" || tr.Apart() != nil {
			t.Fatalf("origin %q: leaf %s, apart %v; want y, none", origin, tr.Leaf(), tr.Apart())
		}
	}
}

// A skeleton keeps the origins: a tree opened from a snapshot decides
// the leaf as the tree it was taken from would.
func TestSkeletonKeepsTheOrigins(t *testing.T) {
	ws := []written{{"hub", userAt("r", "", 1)}, {"a", userAt("a1", "r", 3)}, {"b", userAt("b1", "r", 5)}}
	full := treeOf(t, ws)
	p, err := session.NewPartialTree(full.Header(), sessiontest.Must(t, full.Skeleton))
	if err != nil {
		t.Fatal(err)
	}
	// a writes again, earlier than b's last: b's branch stays the leaf.
	for _, tr := range []*session.Tree{full, p} {
		if err := tr.ApplyFrom("a", userAt("a2", "a1", 4)); err != nil {
			t.Fatal(err)
		}
	}
	if full.Leaf() != "b1" || p.Leaf() != "b1" {
		t.Fatalf("leaf %s (full), %s (from skeleton); want b1", full.Leaf(), p.Leaf())
	}
	sk := sessiontest.Must(t, full.Skeleton)
	sk.Origins = append(sk.Origins, sk.Origins[0])
	if _, err := session.NewPartialTree(full.Header(), sk); !errors.Is(err, session.ErrInvalidEntry) {
		t.Fatalf("a skeleton repeating an origin: %v", err)
	}
}

// A stand-in takes entries of the session's one origin only.
func TestStandInRefusesAnotherOrigin(t *testing.T) {
	tr := treeOf(t, []written{{"a", userAt("r", "", 1)}, {"a", userAt("a1", "r", 2)}})
	branch, _, err := tr.StandInBranch(tr.Leaf(), 100)
	if err != nil {
		t.Fatal(err)
	}
	si, err := session.NewStandIn(tr.Header(), branch)
	if err != nil {
		t.Fatal(err)
	}
	si.WithOrigin("a")
	if err := si.ApplyFrom("a", userAt("a2", "a1", 3)); err != nil {
		t.Fatal(err)
	}
	if err := si.ApplyFrom("b", userAt("b1", "a2", 4)); !errors.Is(err, session.ErrBeyondStandIn) {
		t.Fatalf("an entry of another origin: %v", err)
	}
	if si.Tree().Leaf() != "a2" {
		t.Fatalf("leaf %s", si.Tree().Leaf())
	}
}

// Headers of a session created on two nodes while apart: each node keeps
// the earlier, whichever it met first, so both keep the same.
func TestMeetHeaderKeepsTheEarlierOnEveryNode(t *testing.T) {
	for _, c := range []struct{ a, b session.Header }{
		{session.Header{ID: "s", Timestamp: "2026-01-01T00:00:01.000Z", Cwd: "/a"}, session.Header{ID: "s", Timestamp: "2026-01-01T00:00:02.000Z", Cwd: "/b"}},
		{session.Header{ID: "s", Timestamp: "2026-01-01T00:00:01.000Z", Cwd: "/a"}, session.Header{ID: "s", Timestamp: "2026-01-01T00:00:01.000Z", Cwd: "/b"}},
		{session.Header{ID: "s", Timestamp: "2026-01-01T00:00:01.000Z", Cwd: "/a", Version: 3}, session.Header{ID: "s", Timestamp: "2026-01-01T00:00:01.000Z", Cwd: "/a", Version: 2}},
	} {
		one, other := session.NewTree(c.a), session.NewTree(c.b)
		one.MeetHeader(c.b)
		other.MeetHeader(c.a)
		if one.Header().Cwd != other.Header().Cwd || one.Header().Version != other.Header().Version {
			t.Errorf("%+v and %+v: the nodes keep %+v and %+v", c.a, c.b, one.Header(), other.Header())
		}
		if session.EarlierHeader(c.a, c.b) == session.EarlierHeader(c.b, c.a) {
			t.Errorf("%+v and %+v are not ordered", c.a, c.b)
		}
	}
	// Another session's header is never taken.
	tr := session.NewTree(session.Header{ID: "s", Timestamp: "2026-01-01T00:00:02.000Z"})
	tr.MeetHeader(session.Header{ID: "t", Timestamp: "2026-01-01T00:00:01.000Z"})
	if tr.Header().ID != "s" {
		t.Fatal("a header of another session was taken")
	}
}
