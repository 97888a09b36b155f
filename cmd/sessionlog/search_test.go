package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// search finds messages across sessions on the embedded node (bringing
// the data dir's index up to date itself) and through a running serve's
// service, and says what is wrong with a query.
func TestSearchVerb(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "s1")
	mustRun(t, data, "", "new", "-id", "s2")
	e1 := mustRun(t, data, "", "append", "s1", "-text", "the quick brown fox")
	mustRun(t, data, "", "append", "s2", "-text", "a lazy dog sleeps")
	out := mustRun(t, data, "", "search", "quick", "fox")
	if !strings.Contains(out, "s1") || !strings.Contains(out, e1) || !strings.Contains(out, "[quick] brown [fox]") || strings.Contains(out, "s2") {
		t.Fatalf("search on the embedded node:\n%s", out)
	}
	// Written since: the index catches up before answering.
	mustRun(t, data, "", "append", "s2", "-text", "the fox again")
	var res search.Result
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "search", "-json", "fox")), &res); err != nil || res.Total != 2 {
		t.Fatalf("search -json: %+v (%v)", res, err)
	}

	// Within a session, its current branch unless asked otherwise.
	left := mustRun(t, data, "", "append", "s1", "-text", "a fox on a branch left behind")
	mustRun(t, data, "", "move", "s1", e1)
	kept := mustRun(t, data, "", "append", "s1", "-text", "a fox on the branch kept")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-session", "s1"}, []string{e1, kept}},
		{[]string{"-session", "s1", "-at", left}, []string{e1, left}},
		{[]string{"-session", "s1", "-scope", "subtree", "-at", e1}, []string{e1, left, kept}},
		{[]string{"-session", "s1", "-scope", "session"}, []string{e1, left, kept}},
	} {
		var res search.Result
		if err := json.Unmarshal([]byte(mustRun(t, data, "", append(append([]string{"search", "-json"}, c.args...), "fox")...)), &res); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Entry)
		}
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Fatalf("search %v fox: %v, want %v", c.args, got, c.want)
		}
	}
	if code, _, stderr := runIn(t, data, "", "search", "-scope", "subtree", "-session", "s1", "fox"); code == 0 || !strings.Contains(stderr, "at") {
		t.Fatalf("a subtree without -at: exit %d, %q", code, stderr)
	}

	serveFor(t, data, "-http", "")
	mustRun(t, data, "", "append", "s1", "-text", "served foxes are searchable")
	sessiontest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		var res search.Result
		if err := json.Unmarshal([]byte(mustRun(t, data, "", "search", "-json", "served")), &res); err != nil || res.Total != 1 {
			return fmt.Errorf("search through serve found %+v (%v)", res, err)
		}
		return nil
	})
	code, _, stderr := runIn(t, data, "", "search", "-limit", "5000", "fox")
	if code == 0 || !strings.Contains(stderr, "limit") {
		t.Fatalf("a limit over the bound: exit %d, %q", code, stderr)
	}
}
