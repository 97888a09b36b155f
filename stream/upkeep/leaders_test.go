package upkeep

import "testing"

func TestPlanMove(t *testing.T) {
	all := func(n int) [][]string {
		out := make([][]string, n)
		for i := range out {
			out[i] = []string{"n1", "n2", "n3"}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		leaders  []string
		peers    [][]string
		wantPart int
		wantTo   string
	}{
		{"spread", []string{"n1", "n2", "n3", "n1"}, all(4), -1, ""},
		{"all on one", []string{"n1", "n1", "n1", "n1", "n1", "n1"}, all(6), 0, "n2"},
		{"three, two, one", []string{"n1", "n1", "n2", "n3", "n1", "n2"}, all(6), 0, "n3"},
		{"one above the others is even", []string{"n1", "n1", "n2", "n3", "n1", "n2", "n3"}, all(7), -1, ""},
		{"two above the least", []string{"n2", "n2", "n2", "n1", "n3", "n3"}, all(6), 0, "n1"},
		{"only to a current follower", []string{"n1", "n1", "n1"}, [][]string{{"n1"}, {"n1", "n3"}, {"n1"}}, 1, "n3"},
		{"no follower can take it", []string{"n1", "n1", "n1"}, [][]string{{"n1"}, {"n1"}, {"n1"}}, -1, ""},
		{"electing", []string{"", "n1", "n1", "n1"}, all(4), 1, "n2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part, to := planMove(tc.leaders, countLeaders(tc.leaders, tc.peers), tc.peers)
			if part != tc.wantPart || to != tc.wantTo {
				t.Fatalf("planMove = %d to %q, want %d to %q", part, to, tc.wantPart, tc.wantTo)
			}
		})
	}
}
