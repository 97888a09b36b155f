package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentcore/sessionlog/service"
)

// Failed requests are counted in micro's STATS (the endpoint's data), and
// error replies carry no zero-valued members.
func TestStatsCountErrors(t *testing.T) {
	f := start(t, func(c *service.Config) { c.Name = "stats-test" })
	f.call(t, service.OpCreate, service.CreateRequest{ID: "st1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := f.c.Raw(ctx, service.OpOpen, []byte(`{"session":"nope"}`))
	if err == nil {
		t.Fatalf("open of a missing session answered %s", raw)
	}
	msg, err := nc.Request(f.cfg.Subject+"."+service.OpOpen, []byte(`{"session":"nope"}`), 5*time.Second)
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
		if ep.Name != service.OpOpen {
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
