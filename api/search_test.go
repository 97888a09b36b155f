package api

import (
	"fmt"
	"testing"
)

// BySession keeps the order of each session's best hit, and of the hits
// within a session.
func TestSearchReplyBySession(t *testing.T) {
	for _, c := range []struct {
		hits []string // session/entry, best first
		want string
	}{
		{nil, "[]"},
		{[]string{"a/1"}, "[[a/1]]"},
		{[]string{"a/1", "b/2", "a/3", "c/4", "b/5"}, "[[a/1 a/3] [b/2 b/5] [c/4]]"},
	} {
		var r SearchReply
		for _, h := range c.hits {
			r.Hits = append(r.Hits, SearchHit{Session: h[:1], Entry: h[2:]})
		}
		var got [][]string
		for _, g := range r.BySession() {
			var ids []string
			for _, h := range g {
				ids = append(ids, h.Session+"/"+h.Entry)
			}
			got = append(got, ids)
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%v: %s, want %s", c.hits, s, c.want)
		}
	}
}
