package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The OpenAI Agents SDK the session adapter is held to.
var agentsPackages = []string{"@openai/agents-core@0.20.0"}

// agentsApp makes the application the OpenAI Agents SDK tests run from.
func agentsApp(t *testing.T) string {
	return clientApp(t, ".oa-test", "OpenAI Agents SDK", agentsPackages...)
}

// The SDK's own MemorySession and SessionlogSession, given the same
// operations (adds, pops, clears, history mutations, both transaction
// kinds with repeats and mismatches, invalid transactions), give the same
// reads and the same failures, and another process reads the same
// (clients/typescript/test-openai/session.test.mjs).
func TestOpenAIAgentsSession(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, agentsApp(t), node, "test-openai/session.test.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := a.cmd(ctx, "--test", "session.test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 1") || !strings.Contains(string(out), "# skipped 0") {
		t.Fatalf("node --test session.test.mjs: %v\n%s", err, out)
	}
}

// An Agent with a scripted model and a tool, one turn per process, on a
// SessionlogSession: three turns (the second calls the tool) each resume
// the session the one before left; then two runners at once on the same
// session lose nothing — both turns are stored, each whole, the later one
// after the other's (clients/typescript/test-openai/runner.mjs).
func TestOpenAIAgentsRunner(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, agentsApp(t), node, "test-openai/runner.mjs")
	session := "runner session: " + t.Name()
	type turn struct {
		Output string           `json:"output"`
		Items  []map[string]any `json:"items"`
	}
	start := func(say string) func() turn {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := a.cmd(ctx, "runner.mjs", session, say)
		var out, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return func() turn {
			defer cancel()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("runner.mjs %q: %v\n%s%s", say, err, out.String(), stderr.String())
			}
			var v turn
			if err := json.Unmarshal([]byte(lastLine([]byte(out.String()))), &v); err != nil {
				t.Fatalf("runner.mjs %q printed %q", say, out.String())
			}
			return v
		}
	}
	for _, tt := range []struct{ say, want string }{
		{"hello", "1 user messages so far; you said: hello"},
		{"what is the weather?", "the weather: sunny in Paris"},
		{"thanks", "3 user messages so far; you said: thanks"},
	} {
		if got := start(tt.say)(); got.Output != tt.want {
			t.Fatalf("turn %q: %q, want %q", tt.say, got.Output, tt.want)
		}
	}
	waitA, waitB := start("from A"), start("from B")
	ra, rb := waitA(), waitB()
	final := start("and now?")()
	if final.Output != "6 user messages so far; you said: and now?" {
		t.Fatalf("after two runners at once: %q\n%v", final.Output, final.Items)
	}
	texts := map[string]int{}
	for _, it := range final.Items {
		if s, ok := it["content"].(string); ok {
			texts[s]++
		}
		if c, ok := it["content"].([]any); ok && len(c) > 0 {
			if m, ok := c[0].(map[string]any); ok {
				texts[fmt.Sprint(m["text"])]++
			}
		}
	}
	for _, want := range []string{"from A", "from B", ra.Output, rb.Output, "the weather: sunny in Paris"} {
		if texts[want] != 1 && !(want == ra.Output && ra.Output == rb.Output && texts[want] == 2) {
			t.Errorf("%q is stored %d times in the history:\n%v", want, texts[want], final.Items)
		}
	}
	if len(final.Items) != 14 {
		t.Errorf("the history holds %d items, want 14 (5 turns of two, the tool's call and result, and the last turn)", len(final.Items))
	}
}

// The README's OpenAI Agents SDK example runs as written, and prints what
// it says.
func TestOpenAIAgentsReadmeExample(t *testing.T) {
	if out := runReadmeExample(t, agentsApp(t), "openai-agents"); !strings.HasPrefix(out, "2\nWhere is my order?\nsession oa-") {
		t.Fatalf("the README's example printed:\n%s", out)
	}
}
