package edges

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A sync under a bandwidth bound uses the bound, and finishes: an edge at
// -hub-bandwidth 20000 takes a 240 KB backlog to its hub with its link
// carrying 80% of the bound or more, both ways (what the edge wrote also
// comes back from the hub, which it keeps a copy of), as the edge's
// progress lines say. Before, such a backlog did not move in 77 s, and at
// 3000 B/s 3 entries moved in 40 s: the link's small frames (its
// requests, JetStream's) waited behind the sync, and timed out (issue 68,
// item 6).
func TestEdgeSyncUsesItsBandwidth(t *testing.T) {
	const bound = 20000
	f := newFleet(t, []string{"laptop"}, fleetOpts{apart: true, edge: map[string][]string{"laptop": {"-hub-bandwidth", fmt.Sprint(bound)}}})
	e := f.edges[0]
	ctx := context.Background()
	writeBacklog(t, e, "backlog", 10, strings.Repeat("b", 2400))
	hub := client(t, f.hub.URL, "alice")
	before := len(e.proc.Log.String())
	t0 := time.Now()
	e.link.SetCut(false)
	sessiontest.CheckFor(t, 120*time.Second, 100*time.Millisecond, func() error {
		var r api.StatsReply
		if err := hub.Call(ctx, api.OpStats, api.StatsRequest{Session: "backlog"}, &r); err != nil {
			return err
		}
		if r.Entries != 100 {
			return fmt.Errorf("the hub holds %d of the 100 entries after %v", r.Entries, time.Since(t0).Round(time.Second))
		}
		return nil
	})
	took := time.Since(t0)
	// The link's rate as the edge said it while its messages were still
	// to reach the hub (the first line's span includes the link's start).
	said := regexp.MustCompile(`sync: [1-9]\d* of this edge's messages still to reach the hub.*\(the link: ([\d,]+) B/s of its [\d,]+\)`)
	var rates []float64
	for _, m := range said.FindAllStringSubmatch(e.proc.Log.String()[before:], -1) {
		v, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		rates = append(rates, float64(v)/bound)
	}
	t.Logf("240 KB backlog at %d B/s: at the hub in %v; the link's use of its bound as said: %.2f", bound, took.Round(100*time.Millisecond), rates)
	if len(rates) < 2 {
		t.Fatalf("the edge said its link's rate %d times during a sync of %v", len(rates), took)
	}
	mean := 0.0
	for _, r := range rates[1:] {
		mean += r / float64(len(rates)-1)
	}
	if mean < 0.8 {
		t.Fatalf("the link carried %.0f%% of its bound during the sync, want 80%% or more", 100*mean)
	}
}
