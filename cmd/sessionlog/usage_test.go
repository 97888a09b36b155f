package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// reply is an assistant message of a model with usage, as append reads
// it on stdin.
func reply(model string, in, out int, cost float64, at string) string {
	name, _ := json.Marshal(model)
	return fmt.Sprintf(`{"type":"message","timestamp":%q,"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"x","provider":"p","model":%s,"stopReason":"stop","timestamp":1,"usage":{"input":%d,"output":%d,"cacheRead":0,"cacheWrite":0,"totalTokens":%d,"cost":{"total":%g}}}}`,
		at, name, in, out, in+out, cost)
}

// usage sums replies across sessions on the embedded node and through a
// running serve; what it prints of a hostile model name stays on its
// line; bad dimensions are refused.
func TestUsageVerb(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "u1")
	mustRun(t, data, "", "new", "-id", "u2")
	mustRun(t, data, reply("m1", 100, 10, 0.25, "2026-03-01T10:00:00Z"), "append", "-entry", "u1")
	mustRun(t, data, reply("m1", 50, 5, 0.5, "2026-03-02T10:00:00Z"), "append", "-entry", "u2")
	mustRun(t, data, reply("evil\n\x1b[2Jmodel\tx", 1, 1, 0, "2026-03-02T11:00:00Z"), "append", "-entry", "u2")
	var rep slapi.UsageReport
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "usage", "-json", "-by", "model", "-model", "m1")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 2 || len(rep.Rows) != 1 || rep.Rows[0].Model != "p/m1" || rep.Total.Tokens != 165 || rep.Total.Turns != 2 || rep.Total.Cost != 0.75 {
		t.Fatalf("usage -by model -model m1: %+v", rep)
	}
	out := mustRun(t, data, "", "usage", "-by", "day,model")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[1], "2026-03-01") || !strings.Contains(lines[4], "TOTAL") || strings.ContainsAny(out, "\x1b\t") {
		t.Fatalf("usage -by day,model:\n%s", out)
	}
	if !strings.Contains(out, "p/evil \uFFFD[2Jmodel x") {
		t.Fatalf("the hostile model name is not shown on its line:\n%q", out)
	}
	if code, _, stderr := runIn(t, data, "", "usage", "-by", "week"); code == 0 || !strings.Contains(stderr, "week") {
		t.Fatalf("-by week: exit %d, %q", code, stderr)
	}

	serveFor(t, data, "-http", "")
	mustRun(t, data, reply("m2", 1000, 1, 1, "2026-03-03T10:00:00Z"), "append", "-entry", "u1")
	sessiontest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		var rep slapi.UsageReport
		if err := json.Unmarshal([]byte(mustRun(t, data, "", "usage", "-json", "-by", "", "-since", "2026-03-02")), &rep); err != nil ||
			rep.Total.Tokens != 55+2+1001 || rep.Sessions != 2 || len(rep.Rows) != 1 {
			return fmt.Errorf("usage through serve: %+v (%v)", rep, err)
		}
		return nil
	})
}
