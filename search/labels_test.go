package search_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A label filter finds the entries whose latest label entry gives them
// the label — relabelled and cleared ones not — checked against the
// labels' own record (each entry's latest), across sessions.
func TestLabelFilterAgainstTheLatestLabels(t *testing.T) {
	b := backend(t, 2)
	x, ix, _ := follow(t, b, "")
	ctx := context.Background()
	want := map[string]string{} // session/entry -> its label now
	for s := range 4 {
		sid := fmt.Sprintf("l%d", s)
		ids := write(t, b, sid, "marker one", "marker two", "marker three", "marker four", "marker five", "marker six")
		st, err := b.Open(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		sess, _ := session.New(st, sessiontest.TestConfig())
		for k, step := range []struct {
			entry int
			label string
		}{{0, "keep"}, {1, "keep"}, {2, "keep"}, {2, "other"}, {3, "keep"}, {3, ""}, {4, "other"}, {4, "keep"}, {5 - s%2, "keep"}} {
			if _, err := sess.SetLabel(ctx, ids[step.entry], step.label); err != nil {
				t.Fatalf("label %d: %v", k, err)
			}
			want[sid+"/"+ids[step.entry]] = step.label
		}
		st.Close(ctx)
	}
	caughtUp(t, ix)
	for _, label := range []string{"keep", "other", "absent"} {
		var expect []string
		for k, v := range want {
			if v == label {
				expect = append(expect, k)
			}
		}
		res := find(t, x, b, search.Query{Text: "marker", Filter: search.Filter{Label: label}, Limit: 100})
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Session+"/"+h.Entry)
		}
		slices.Sort(got)
		slices.Sort(expect)
		if !slices.Equal(got, expect) || int(res.Total) != len(expect) {
			t.Errorf("label %q: %v (total %d), the labels say %v", label, got, res.Total, expect)
		}
	}
	// Within a session, and with another filter, the same rule.
	res := find(t, x, b, search.Query{Text: "marker", Session: "l1", Filter: search.Filter{Label: "keep", Role: "user"}, Scope: nil, Limit: 100})
	for _, h := range res.Hits {
		if h.Session != "l1" || h.Role != "user" || want["l1/"+h.Entry] != "keep" {
			t.Errorf("within l1: %+v", h)
		}
	}
	if len(res.Hits) == 0 {
		t.Error("within l1: no hits")
	}
	_, err := x.Search(ctx, search.Query{Text: "marker", Filter: search.Filter{Label: "\xff"}}, nil)
	var qe *search.QueryError
	if !errors.As(err, &qe) || qe.Field != "label" {
		t.Errorf("a label not UTF-8: %v", err)
	}
}
