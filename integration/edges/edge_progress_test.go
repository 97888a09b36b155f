package edges

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A first sync says how far it is: an edge that wrote while never linked
// counts, once its link is up, what it still has to send (as the hub's
// sourcing counts it), then says when it is up to date — and by then the
// hub holds it all.
func TestEdgeSyncSaysHowFarItIs(t *testing.T) {
	// 256 KiB/s: a sync of about a megabyte takes long enough to be seen.
	f := newFleet(t, []string{"laptop"}, fleetOpts{apart: true, edge: map[string][]string{"laptop": {"-hub-bandwidth", "262144"}}})
	e := f.edges[0]
	ctx := context.Background()
	ids := writeBacklog(t, e, "away", 40, strings.Repeat("written away from the hub ", 100))
	t0 := time.Now()
	before := len(e.proc.Log.String())
	e.link.SetCut(false)

	// Each progress line counts what was left when it was said, or says
	// it cannot count yet; "up to date" is said only once the hub holds
	// every entry.
	counted := regexp.MustCompile(`sync: (\d+|\(not counted yet[^)]*\)) of this edge's messages still to reach the hub`)
	hub := client(t, f.hub.URL, "alice")
	var lines []string
	sessiontest.CheckFor(t, 120*time.Second, 50*time.Millisecond, func() error {
		log := e.proc.Log.String()[before:]
		lines = lines[:0]
		for _, m := range counted.FindAllStringSubmatch(log, -1) {
			lines = append(lines, m[1])
		}
		if !strings.Contains(log, "sync: up to date with the hub") {
			return fmt.Errorf("not up to date yet (progress: %v)", lines)
		}
		return nil
	})
	t.Logf("up to date %v after the link came back; still to send, as said before: %v", time.Since(t0).Round(time.Millisecond), lines)
	var r api.StatsReply
	if err := hub.Call(ctx, api.OpStats, api.StatsRequest{Session: "away"}, &r); err != nil {
		t.Fatal(err)
	}
	if r.Entries != len(ids) {
		t.Fatalf("the edge said it was up to date when the hub held %d of its %d entries", r.Entries, len(ids))
	}
	if len(lines) == 0 {
		t.Fatal("no progress said between the link coming back and up to date")
	}
}

// writeBacklog writes session id on edge e: batches appends of ten
// messages of text each; it gives their ids.
func writeBacklog(t *testing.T, e *fleetEdge, id string, batches int, text string) []string {
	t.Helper()
	ctx := context.Background()
	if err := e.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	entry := jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)
	for range batches {
		var r api.AppendReply
		if err := e.c.Call(ctx, api.OpAppend, api.AppendRequest{Session: id, Entries: slices.Repeat([]jsontext.Value{entry}, 10)}, &r); err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Entries {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// An edge whose link was cut for a moment tells the hub when it is back,
// and both sides' sourcing starts again at once, where it stood. Cut
// while the hub's sourcing of the edge was still starting, JetStream's
// own retry came about 40 s after the link was back.
func TestEdgeResumesAtOnceAfterACut(t *testing.T) {
	f := newFleet(t, []string{"laptop"}, fleetOpts{})
	e := f.edges[0]
	hub := client(t, f.hub.URL, "alice")
	ctx := context.Background()
	if err := e.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "flaky"}, nil); err != nil {
		t.Fatal(err)
	}
	first := appendMessages(t, e.c, "flaky", "before the cut", 5)
	e.link.SetCut(true)
	more := appendMessages(t, e.c, "flaky", "written in a cut", 20)
	t0 := time.Now()
	e.link.SetCut(false)
	sessiontest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		var r api.StatsReply
		if err := hub.Call(ctx, api.OpStats, api.StatsRequest{Session: "flaky"}, &r); err != nil {
			return err
		}
		if r.Entries != len(first)+len(more) {
			return fmt.Errorf("the hub holds %d of %d entries", r.Entries, len(first)+len(more))
		}
		return nil
	})
	t.Logf("the hub holds what was written in a cut %v after the link came back", time.Since(t0).Round(time.Millisecond))
	hubHolds(t, hub, append(first, more...), "flaky")
}
