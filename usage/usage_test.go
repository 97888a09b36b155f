package usage

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

func TestLedgerCountsEachCallOnce(t *testing.T) {
	call := func(key, req string, side bool, out int64) Call {
		return Call{Key: key, Request: req, Sidechain: side, Input: 10, Output: out, Turn: true}
	}
	for _, tc := range []struct {
		name  string
		calls []Call
		want  int64 // output tokens counted
	}{
		{"repeats of one message: the largest", []Call{call("m1", "r1", false, 3), call("m1", "r1", false, 3), call("m1", "r1", false, 300)}, 300},
		{"a smaller repeat after the final one", []Call{call("m1", "r1", false, 300), call("m1", "r1", false, 3)}, 300},
		{"two messages", []Call{call("m1", "r1", false, 5), call("m2", "r2", false, 7)}, 12},
		{"one message under two requests", []Call{call("m1", "r1", false, 5), call("m1", "r2", false, 7)}, 12},
		{"a sidechain replay of the parent's", []Call{call("m1", "r1", false, 5), call("m1", "r9", true, 500)}, 5},
		{"the parent's after its replay", []Call{call("m1", "r9", true, 500), call("m1", "r1", false, 5)}, 5},
		{"a sidechain's own answer", []Call{call("m1", "r1", false, 5), call("m2", "r2", true, 30)}, 35},
		{"calls without a key", []Call{call("", "", false, 5), call("", "", false, 5)}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger
			var out int64
			for _, c := range tc.calls {
				counted, old, replaced := l.Add(c)
				if replaced {
					out -= old.Output
				}
				if counted {
					out += c.Output
				}
			}
			if out != tc.want {
				t.Fatalf("counted %d output tokens, want %d", out, tc.want)
			}
		})
	}
}

func TestLedgerWindowForgetsTheOldest(t *testing.T) {
	l := Ledger{Window: 2}
	for _, k := range []string{"a", "b", "c"} {
		l.Add(Call{Key: k, Output: 1})
	}
	if counted, _, _ := l.Add(Call{Key: "c", Output: 1}); counted {
		t.Fatal("a repeat within the window counted again")
	}
	if counted, _, _ := l.Add(Call{Key: "a", Output: 1}); !counted {
		t.Fatal("a key past the window is still remembered: the window does not bound memory")
	}
	var r Ledger
	r.Window = 2
	r.Restore(l.Remembered())
	if counted, _, _ := r.Add(Call{Key: "a", Output: 1}); counted {
		t.Fatal("a restored ledger counts a remembered call again")
	}
}

func TestClaudeLineRead(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		ok         bool
		want       Call
	}{
		{"a reply", `{"type":"assistant","timestamp":"2026-02-10T21:00:00Z","requestId":"r1","version":"2.1.38","message":{"id":"m1","model":"claude-opus-4-6","usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":100,"cache_creation_input_tokens":50,"cache_creation":{"ephemeral_5m_input_tokens":20,"ephemeral_1h_input_tokens":30}}}}`,
			true, Call{Key: "m1", Request: "r1", Turn: true, Provider: "anthropic", Model: "claude-opus-4-6", Input: 3, Output: 9, CacheRead: 100, CacheWrite: 50, CacheWrite1h: 30}},
		{"Claude Code's own notice", `{"timestamp":"2026-02-10T21:00:00Z","message":{"model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}`,
			true, Call{Turn: true}},
		{"no output count", `{"timestamp":"2026-02-10T21:00:00Z","message":{"usage":{"input_tokens":3}}}`, false, Call{}},
		{"a null model", `{"timestamp":"2026-02-10T21:00:00Z","message":{"model":null,"usage":{"input_tokens":3,"output_tokens":1}}}`, false, Call{}},
		{"an empty request id", `{"timestamp":"2026-02-10T21:00:00Z","requestId":"","message":{"usage":{"input_tokens":3,"output_tokens":1}}}`, false, Call{}},
		{"a version that is not one", `{"timestamp":"2026-02-10T21:00:00Z","version":"dev","message":{"usage":{"input_tokens":3,"output_tokens":1}}}`, false, Call{}},
		{"no time", `{"message":{"usage":{"input_tokens":3,"output_tokens":1}}}`, false, Call{}},
		{"not JSON", `{"message":{"usage":`, false, Call{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := claudeCall([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("read %v, want %v", ok, tc.ok)
			}
			c.At = time.Time{}
			if ok && c != tc.want {
				t.Fatalf("read %+v, want %+v", c, tc.want)
			}
		})
	}
}

func TestCodexTokenCounts(t *testing.T) {
	var r Reader
	lines := []string{
		`{"timestamp":"2026-05-11T08:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}}}}`,
		`{"timestamp":"2026-05-11T08:00:01Z","type":"turn_context","payload":{"model":"gpt-5.5"}}`,
		`{"timestamp":"2026-05-11T08:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250,"cached_input_tokens":140,"output_tokens":30}}}}`,
		`{"timestamp":"2026-05-11T08:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250,"cached_input_tokens":140,"output_tokens":30},"last_token_usage":{"input_tokens":0,"output_tokens":0}}}}`,
		`{"timestamp":"2026-05-11T08:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":60,"cached_input_tokens":80,"output_tokens":5}}}}`,
		`{"timestamp":"2026-05-11T08:00:05Z","type":"event_msg","payload":{"type":"token_count","info":null}}`,
	}
	var got []Call
	for _, l := range lines {
		if c, ok := r.codexCall([]byte(l)); ok {
			c.At = time.Time{}
			got = append(got, c)
		}
	}
	want := []Call{
		{Turn: true, Provider: "openai", Model: "gpt-5", Input: 60, CacheRead: 40, Output: 10},    // before any model: gpt-5
		{Turn: true, Provider: "openai", Model: "gpt-5.5", Input: 50, CacheRead: 100, Output: 20}, // the totals' growth
		{Turn: true, Provider: "openai", Model: "gpt-5.5", Input: 0, CacheRead: 60, Output: 5},    // cached counts within the input
	}
	if len(got) != len(want) {
		t.Fatalf("read %d calls, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPrices(t *testing.T) {
	tab := Default()
	feb := time.Date(2026, 2, 10, 12, 0, 0, 0, time.UTC)
	apr := time.Date(2026, 4, 10, 12, 0, 0, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name  string
		call  Call
		cost  float64
		known bool
	}{
		{"opus 4.6, an hour's cache writes", Call{Provider: "anthropic", Model: "claude-opus-4-6", At: feb, Input: 3, Output: 13, CacheRead: 11515, CacheWrite: 13835, CacheWrite1h: 13835}, 0.1444475, true},
		{"opus 4.6 past 200k input before its long context was one price", Call{Provider: "anthropic", Model: "claude-opus-4-6", At: feb, Input: 1, CacheRead: 250000, Output: 1000}, (1*10 + 250000*1 + 1000*37.5) / 1e6, true},
		{"the same after", Call{Provider: "anthropic", Model: "claude-opus-4-6", At: apr, Input: 1, CacheRead: 250000, Output: 1000}, (1*5 + 250000*0.5 + 1000*25) / 1e6, true},
		{"a dated name", Call{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", At: feb, Input: 100000}, 0.3, true},
		{"the whole call at the tier past it", Call{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", At: feb, Input: 100000, CacheRead: 100001}, (100000*6 + 100001*0.6) / 1e6, true},
		{"codex's model", Call{Provider: "openai", Model: "gpt-5.5", At: apr, Input: 20000, CacheRead: 100000, Output: 1000}, 0.18, true},
		{"what the agent recorded", Call{Provider: "x", Model: "nobody-knows", Input: 5, Recorded: f(0.25)}, 0.25, true},
		{"a model without a price", Call{Provider: "x", Model: "nobody-knows", Input: 5}, 0, false},
		{"no model", Call{Input: 5}, 0, false},
		{"fast speed", Call{Provider: "anthropic", Model: "claude-opus-4-6", Fast: true, Input: 5}, 0, false},
		{"nothing used", Call{Model: "nobody-knows"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cost, known := tab.Cost(tc.call)
			if known != tc.known || math.Abs(cost-tc.cost) > 1e-9 {
				t.Fatalf("cost %v (known %v), want %v (%v)", cost, known, tc.cost, tc.known)
			}
		})
	}
}

func TestOverrides(t *testing.T) {
	tab, err := Default().WithOverrides([]byte(`{"models":{"anthropic/claude-opus-4-6":{"input_mtok":1,"output_mtok":2},"My-Model":{"input_mtok":10,"output_mtok":20,"cache_read_mtok":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Fingerprint() == Default().Fingerprint() {
		t.Fatal("overrides leave the fingerprint as it was: an index would keep old costs")
	}
	for _, tc := range []struct {
		call Call
		cost float64
	}{
		{Call{Provider: "anthropic", Model: "claude-opus-4-6", Input: 1e6, Output: 1e6, CacheRead: 1e6}, 1 + 2 + 1}, // cache reads at the input price
		{Call{Provider: "local", Model: "my-model", Input: 1e6, CacheRead: 1e6}, 11},
		{Call{Provider: "anthropic", Model: "claude-haiku-4-5", Input: 1e6}, 1}, // the table's
	} {
		if cost, known := tab.Cost(tc.call); !known || math.Abs(cost-tc.cost) > 1e-9 {
			t.Errorf("%s: cost %v (%v), want %v", tc.call.Model, cost, known, tc.cost)
		}
	}
	for _, bad := range []string{``, `{}`, `{"models":{}}`, `{"models":{"m":{"input_mtok":1}}}`, `{"models":{"m":{"input_mtok":-1,"output_mtok":1}}}`,
		`{"models":{"m":{"input_mtok":1,"output_mtok":1,"extra":1}}}`, `{"models":{"":{"input_mtok":1,"output_mtok":1}}}`} {
		if _, err := Default().WithOverrides([]byte(bad)); !errors.Is(err, ErrOverrides) {
			t.Errorf("%q: %v, want ErrOverrides", bad, err)
		}
	}
}

func TestSessionSumsWithoutRepeats(t *testing.T) {
	reply := func(id string, out int64) *session.Entry {
		m := session.Message{Role: session.RoleAssistant, Content: session.TextContent("x"),
			Body: &session.AssistantFields{Provider: "anthropic", Model: "claude-haiku-4-5", Usage: &session.Usage{Input: 1000, Output: out}}}
		return &session.Entry{Type: session.TypeMessage, ID: id, Timestamp: "2026-04-01T00:00:00Z", Message: &m}
	}
	s := Session([]*session.Entry{reply("a", 10), reply("b", 20)}, Default())
	if s.Turns != 2 || s.Output != 30 || s.Tokens != 2030 || math.Abs(s.Cost-(2000*1+30*5)/1e6) > 1e-12 || s.UnpricedCalls != 0 {
		t.Fatalf("%+v", s)
	}
}
