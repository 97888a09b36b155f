package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Google's Agent Development Kit, as the session service is held to it.
var adkPackages = []string{"@google/adk@2.0.0"}

// adkApp makes the application the ADK tests run from.
func adkApp(t *testing.T) string {
	return clientApp(t, ".adk-test", "Google ADK", adkPackages...)
}

// ADK's own InMemorySessionService and SessionlogSessionService, given
// the same operations (creates with state in every scope, events of
// every kind with state deltas, a partial event, an event appended again,
// reads with numRecentEvents and afterTimestamp, lists paged and ordered,
// deletes), give the same reads and the same failures; the differences
// made on purpose are checked; another process reads the same; a stale
// Session object's event is merged (clients/typescript/test-adk/session.test.js).
func TestADKSessionService(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, adkApp(t), node, "test-adk/session.test.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := a.cmd(ctx, "--test", "session.test.mjs").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 5") || !strings.Contains(string(out), "# skipped 0") {
		t.Fatalf("node --test session.test.mjs: %v\n%s", err, out)
	}
}

// A real ADK Runner with an LlmAgent on a scripted model (a BaseLlm of
// its own, no network) and a tool, one turn per process: three turns,
// the second calling the tool (which sets user: state), each resuming the
// session the one before left (clients/typescript/test-adk/runner.js).
func TestADKRunner(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, adkApp(t), node, "test-adk/runner.js")
	session := "runner-" + fmt.Sprint(time.Now().UnixNano())
	type turn struct {
		Output string         `json:"output"`
		State  map[string]any `json:"state"`
		Events [][]string     `json:"events"`
	}
	var last turn
	for i, tt := range []struct{ say, want string }{
		{"hello", "1 user messages so far; you said: hello"},
		{"what is the weather?", "the weather: sunny in Paris"},
		{"thanks", "3 user messages so far; you said: thanks"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := a.cmd(ctx, "runner.mjs", session, tt.say)
		cmd.Env = append(cmd.Env, fmt.Sprintf("TURN=%d", i+1))
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("runner.mjs %q: %v\n%s", tt.say, err, out)
		}
		if err := json.Unmarshal([]byte(lastLine(out)), &last); err != nil {
			t.Fatalf("runner.mjs %q printed %s", tt.say, out)
		}
		if last.Output != tt.want {
			t.Fatalf("turn %q: %q, want %q", tt.say, last.Output, tt.want)
		}
	}
	events, _ := json.Marshal(last.Events)
	want := `[["user","text"],["helper","text"],["user","text"],["helper","functionCall"],["helper","functionResponse"],["helper","text"],["user","text"],["helper","text"]]`
	if string(events) != want {
		t.Errorf("events after three turns:\n%s\nwant\n%s", events, want)
	}
	if last.State["turns"] != float64(3) || last.State["user:asked"] != "Paris" {
		t.Errorf("state after three turns: %v (want turns 3, user:asked Paris)", last.State)
	}
}

// The README's ADK example runs as written, and prints what it says.
func TestADKReadmeExample(t *testing.T) {
	out := runReadmeExample(t, adkApp(t), "adk")
	if want := "1 { budget: 900, city: 'Lisbon', 'user:home': 'Paris' }\n[ 'trip-1' ]\n"; out != want {
		t.Fatalf("the README's example printed:\n%s\nwant:\n%s", out, want)
	}
}
