package gateway_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// GET /v1/sessions takes the listing's filters as query parameters, label
// and meta as often as wanted, and names the parameter a bad one is.
func TestListFilters(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/sessions"
	for _, body := range []string{
		`{"id":"p1","name":"Parser work","cwd":"/w/app","metadata":{"team":"core"}}`,
		`{"id":"p2","name":"docs","cwd":"/w/app/docs","metadata":{"team":"web"}}`,
		`{"id":"p3","name":"parser speed","cwd":"/elsewhere"}`,
	} {
		if r := do(t, "POST", u, body); r.status != 200 {
			t.Fatalf("create: %d %v", r.status, r.body)
		}
	}
	r := do(t, "POST", u+"/p2/entries", `{"entries":[{"type":"message","message":{"role":"user","content":"hi"}}]}`)
	leaf, _ := r.body["leaf"].(string)
	if r := do(t, "POST", u+"/p2/label", `{"target":"`+leaf+`","label":"keep"}`); r.status != 200 {
		t.Fatalf("label: %d %v", r.status, r.body)
	}
	listed := func(q url.Values) []string {
		t.Helper()
		var ids []string
		for cursor := ""; ; {
			q.Set("limit", "1")
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			r := do(t, "GET", u+"?"+q.Encode(), "")
			if r.status != 200 {
				t.Fatalf("list %v: %d %v", q, r.status, r.body)
			}
			for _, s := range r.body["sessions"].([]any) {
				ids = append(ids, s.(map[string]any)["id"].(string))
			}
			next, _ := r.body["next"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		slices.Sort(ids)
		return ids
	}
	// The listing's records follow writes within a second.
	sessiontest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := listed(url.Values{"label": {"keep"}}); len(got) != 1 {
			return fmt.Errorf("listed by label: %v", got)
		}
		return nil
	})
	for _, tt := range []struct {
		q    url.Values
		want []string
	}{
		{url.Values{"name": {"PARSER"}}, []string{"p1", "p3"}},
		{url.Values{"cwd": {"/w/app"}}, []string{"p1", "p2"}},
		{url.Values{"label": {"keep"}}, []string{"p2"}},
		{url.Values{"meta": {"team=core"}}, []string{"p1"}},
		{url.Values{"meta": {"team=core"}, "name": {"docs"}}, nil},
		{url.Values{"since": {"2000-01-01T00:00:00Z"}}, []string{"p1", "p2", "p3"}},
	} {
		if got := listed(tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("list %v: %v, want %v", tt.q, got, tt.want)
		}
	}
	for q, field := range map[string]string{
		"since=yesterday": "/since",
		"meta=novalue":    "?meta",
		"label=":          "/labels",
		"name=a&name=b":   "?name",
		"sort=name":       "?sort",
		"until=2000-01-01T00:00:00Z&since=2001-01-01T00:00:00Z": "/since",
	} {
		r := do(t, "GET", u+"?"+q, "")
		if r.status != 400 || errField(r) != field {
			t.Errorf("list ?%s: %d %v, want 400 naming %s", q, r.status, r.body, field)
		}
	}
}

// GET /v1/search names a bad parameter, and says so when the node keeps
// no index (the test's service has none).
func TestSearchRoute(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/search?"
	for q, want := range map[string]string{
		"q=a&q=b":        "?q",
		"query=x":        "?query",
		"q=x&limit=many": "?limit",
		"q=x&sort=score": "?sort",
	} {
		if r := do(t, "GET", u+q, ""); r.status != 400 || errField(r) != want {
			t.Errorf("search ?%s: %d %v, want 400 naming %s", q, r.status, r.body, want)
		}
	}
	if r := do(t, "GET", u+"q=x", ""); r.status != 503 || errCode(r) != "unavailable" {
		t.Errorf("search without an index: %d %v", r.status, r.body)
	}
}

// GET /v1/usage names a bad parameter, and says so when the node keeps
// no usage (the test's service has no index).
func TestUsageRoute(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/usage?"
	for q, want := range map[string]string{
		"by=day&by=model":                   "?by",
		"by=week":                           "/by",
		"by=day,day":                        "/by",
		"limit=many":                        "?limit",
		"limit=-1":                          "/limit",
		"since=yesterday":                   "/since",
		"session=a/b":                       "/session",
		"group=model":                       "?group",
		"until=2026-01-01&since=2026-02-01": "/until",
	} {
		if r := do(t, "GET", u+q, ""); r.status != 400 || errField(r) != want {
			t.Errorf("usage ?%s: %d %v, want 400 naming %s", q, r.status, r.body, want)
		}
	}
	for _, q := range []string{"", "by=", "by=month,agent&since=2026-01-01"} {
		if r := do(t, "GET", u+q, ""); r.status != 503 || errCode(r) != "unavailable" {
			t.Errorf("usage ?%s without an index: %d %v", q, r.status, r.body)
		}
	}
}

// GET …/stats takes ?timeline=true|false and names anything else.
func TestStatsTimelineParam(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"st"}`); r.status != 200 {
		t.Fatalf("create: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"/st/stats?timeline=maybe", ""); r.status != 400 || errField(r) != "?timeline" {
		t.Fatalf("?timeline=maybe: %d %v", r.status, r.body)
	}
	if r := do(t, "GET", u+"/st/stats?timeline=true", ""); r.status != 200 || r.body["entries"] == nil {
		t.Fatalf("?timeline=true: %d %v", r.status, r.body)
	}
}

// TestReadFreshnessParams: every read route takes consistency and
// maxLagMs as query parameters, checked by the service, and a delete
// takes neither.
func TestReadFreshnessParams(t *testing.T) {
	g := start(t, nil)
	u := g.URL() + "/v1/sessions"
	if r := do(t, "POST", u, `{"id":"fr"}`); r.status != 200 {
		t.Fatalf("create: %d %v", r.status, r.body)
	}
	for _, route := range []string{"/fr", "/fr/context", "/fr/tree", "/fr/entries", "/fr/stats"} {
		if r := do(t, "GET", u+route+"?consistency=replica&maxLagMs=500", ""); r.status != 200 {
			t.Errorf("%s, a replica read: %d %v", route, r.status, r.body)
		}
		if r := do(t, "GET", u+route+"?consistency=eventual", ""); r.status != 400 || errField(r) != "/consistency" {
			t.Errorf("%s?consistency=eventual: %d %v", route, r.status, r.body)
		}
		if r := do(t, "GET", u+route+"?consistency=replica&maxLagMs=soon", ""); r.status != 400 || errField(r) != "?maxLagMs" {
			t.Errorf("%s?maxLagMs=soon: %d %v", route, r.status, r.body)
		}
	}
	if r := do(t, "DELETE", u+"/fr?consistency=replica", ""); r.status != 400 || errField(r) != "?consistency" {
		t.Errorf("a delete with a freshness: %d %v", r.status, r.body)
	}
}
