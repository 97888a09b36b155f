package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
)

// Failed requests are counted in micro's STATS (the endpoint's data), and
// error replies carry no zero-valued members.
func TestStatsCountErrors(t *testing.T) {
	f := start(t, func(c *service.Config) { c.Name = "stats-test" })
	f.call(t, api.OpCreate, api.CreateRequest{ID: "st1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := f.c.Raw(ctx, api.OpOpen, []byte(`{"session":"nope"}`))
	if err == nil {
		t.Fatalf("open of a missing session answered %s", raw)
	}
	msg, err := nc.Request(f.cfg.Subject+"."+api.OpOpen, []byte(`{"session":"nope"}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if body := string(msg.Data); strings.Contains(body, `"sequence"`) || strings.Contains(body, `"retryAfterMs"`) {
		t.Fatalf("an error with zero-valued members: %s", body)
	}
	subj, _ := micro.ControlSubject(micro.StatsVerb, "stats-test", "")
	var got micro.Stats
	msg, err = nc.Request(subj, nil, 5*time.Second)
	if err != nil || json.Unmarshal(msg.Data, &got) != nil {
		t.Fatalf("stats: %v %s", err, msg.Data)
	}
	for _, ep := range got.Endpoints {
		if ep.Name != api.OpOpen {
			continue
		}
		var d struct {
			Answered, Errors int
			ErrorsByCode     map[string]int
		}
		if err := json.Unmarshal(ep.Data, &d); err != nil {
			t.Fatalf("open's data %s: %v", ep.Data, err)
		}
		if d.Errors != 2 || d.ErrorsByCode["not_found"] != 2 {
			t.Fatalf("open's data: %s", ep.Data)
		}
		return
	}
	t.Fatalf("no open endpoint in %+v", got)
}

// slowSearcher holds every search until released.
type slowSearcher struct {
	running chan struct{}
	release chan struct{}
}

func (s slowSearcher) Search(ctx context.Context, q search.Query, _ search.Exists) (search.Result, error) {
	s.running <- struct{}{}
	<-s.release
	return search.Result{Hits: []search.Hit{}}, nil
}

func (slowSearcher) Forget(context.Context, string) error { return nil }

// Searches run at once are bounded: one past MaxSearches is refused,
// rate_limited with when to come back, rather than queued behind them.
func TestSearchesAreBounded(t *testing.T) {
	ss := slowSearcher{running: make(chan struct{}, 2), release: make(chan struct{})}
	f := start(t, func(c *service.Config) { c.Search, c.MaxSearches = ss, 1 })
	done := make(chan error, 1)
	go func() {
		done <- f.c.Call(context.Background(), api.OpSearch, api.SearchRequest{Query: "x"}, nil)
	}()
	<-ss.running // the first holds the only slot
	err := f.c.Call(context.Background(), api.OpSearch, api.SearchRequest{Query: "y"}, nil)
	var pe *api.Error
	if !errors.As(err, &pe) || pe.Code != api.CodeRateLimited || pe.RetryAfterMs == 0 {
		t.Fatalf("a second search at once: %v", err)
	}
	close(ss.release)
	if err := <-done; err != nil {
		t.Fatalf("the first search: %v", err)
	}
	if err := f.c.Call(context.Background(), api.OpSearch, api.SearchRequest{Query: "z"}, nil); err != nil {
		t.Fatalf("a search once the slot is free: %v", err)
	}
}

// stats with timeline sums assistant replies' usage by day and model.
func TestStatsTimeline(t *testing.T) {
	f := start(t, nil)
	f.call(t, api.OpCreate, api.CreateRequest{ID: "tl"}, nil)
	reply := func(ts, model string, in, out int, cost float64) map[string]any {
		return map[string]any{"type": "message", "timestamp": ts, "message": map[string]any{"role": "assistant", "provider": "p", "model": model, "stopReason": "stop",
			"content": []any{map[string]any{"type": "text", "text": "ok"}},
			"usage":   map[string]any{"input": in, "output": out, "cost": map[string]any{"total": cost}}}}
	}
	f.call(t, api.OpAppend, map[string]any{"session": "tl", "entries": []any{
		reply("2025-01-01T10:00:00.000Z", "a", 10, 1, 0.5), reply("2025-01-01T11:00:00.000Z", "a", 20, 2, 0.25),
		reply("2025-01-01T12:00:00.000Z", "b", 5, 5, 1), reply("2025-01-02T10:00:00.000Z", "a", 1, 1, 0),
	}}, nil)
	var r api.StatsReply
	f.call(t, api.OpStats, api.StatsRequest{Session: "tl", Timeline: true}, &r)
	want := []api.UsageDay{
		{Day: "2025-01-01", Model: "p/a", Replies: 2, Input: 30, Output: 3, Cost: 0.75, Tokens: 33},
		{Day: "2025-01-01", Model: "p/b", Replies: 1, Input: 5, Output: 5, Cost: 1, Tokens: 10},
		// No cost given, and the table has no price of p/a: unknown, not free.
		{Day: "2025-01-02", Model: "p/a", Replies: 1, Input: 1, Output: 1, Cost: 0, Tokens: 2, UnpricedCalls: 1, UnpricedTokens: 2},
	}
	if len(r.Timeline) != len(want) || r.TimelineCut {
		t.Fatalf("timeline %+v", r.Timeline)
	}
	for i := range want {
		if r.Timeline[i] != want[i] {
			t.Fatalf("row %d: %+v, want %+v", i, r.Timeline[i], want[i])
		}
	}
	var plain api.StatsReply
	f.call(t, api.OpStats, api.StatsRequest{Session: "tl"}, &plain)
	if u := plain.Usage; plain.Timeline != nil || plain.Messages != 4 || u.Turns != 4 || u.TotalTokens != 45 || u.Cost != 1.75 || u.UnpricedCalls != 1 {
		t.Fatalf("stats without a timeline: %+v", plain)
	}
}
