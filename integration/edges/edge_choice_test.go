package edges

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A machine chooses which of its sessions go to the hub: those under a
// private folder stay on it, entries and content stored apart alike —
// nothing of them is on the hub's disk — while the others sync.
func TestEdgeKeepsChosenSessionsOnTheMachine(t *testing.T) {
	f := newFleet(t, []string{"laptop"}, fleetOpts{edge: map[string][]string{"laptop": {"-keep-local", "cwd=/home/alice/private"}}})
	e := f.edges[0]
	hub := client(t, f.hub.URL, "alice")
	ctx := context.Background()
	large := func(marker string) jsontext.Value {
		text := strings.Repeat(marker+" ", (200<<10)/(len(marker)+1))
		return jsontext.Value(`{"type":"message","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"` + text + `"}]}}`)
	}
	write := func(id, cwd, small string, big jsontext.Value) {
		t.Helper()
		if err := e.c.Call(ctx, api.OpCreate, api.CreateRequest{ID: id, Cwd: cwd}, nil); err != nil {
			t.Fatal(err)
		}
		appendMessages(t, e.c, id, small, 2)
		if err := e.c.Call(ctx, api.OpAppend, api.AppendRequest{Session: id, Entries: []jsontext.Value{big}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	write("diary", "/home/alice/private/diary", "PRIVATE-NOTE-7f3a", large("PRIVATE-BLOB-91c2"))
	write("work", "/home/alice/work/api", "WORK-NOTE-55d0", large("WORK-BLOB-0b7e"))

	// The work session reaches the hub whole, its content stored apart
	// with it: whatever of the private one could have gone went before.
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		var r api.EntriesReply
		if err := hub.Call(ctx, api.OpEntries, api.EntriesRequest{Session: "work"}, &r); err != nil {
			return err
		}
		if len(r.Entries) != 3 || !strings.Contains(string(r.Entries[2]), "WORK-BLOB-0b7e") {
			return fmt.Errorf("the hub holds %d entries of work", len(r.Entries))
		}
		return nil
	})
	if err := hub.Call(ctx, api.OpTree, api.TreeRequest{Session: "diary"}, &api.TreeReply{}); err == nil {
		t.Fatal("the hub holds the session kept on the machine")
	}
	if hits := scanFor(t, f.hubData, "PRIVATE-NOTE-7f3a", "PRIVATE-BLOB-91c2"); len(hits) > 0 {
		t.Fatalf("the session kept on the machine is on the hub's disk:\n%s", strings.Join(hits, "\n"))
	}
	// The scan finds what is there.
	if hits := scanFor(t, f.hubData, "WORK-NOTE-55d0", "WORK-BLOB-0b7e"); len(hits) < 2 {
		t.Fatalf("the scan found %d of the work session's markers on the hub's disk: it cannot tell", len(hits))
	}
	// On the machine, both read whole.
	for _, id := range []string{"diary", "work"} {
		var r api.EntriesReply
		if err := e.c.Call(ctx, api.OpEntries, api.EntriesRequest{Session: id}, &r); err != nil || len(r.Entries) != 3 {
			t.Fatalf("the laptop reads %d entries of %s (%v)", len(r.Entries), id, err)
		}
	}
}
