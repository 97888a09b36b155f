package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
)

// docs/cli.md's "Usage and cost", as an operator tries it: calls without a
// recorded cost priced from the table, a prices.json taking effect (the
// index priced again), a file that cannot be used refused by name, a model
// without a price counted as unpriced, and the prices verb.
func TestNegotiatedPrices(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "p1")
	// 1M input and 1M output tokens of Opus 4.6, no cost recorded; 1,000
	// input tokens of a model nobody prices.
	mustRun(t, data, reply("claude-opus-4-6", 1_000_000, 1_000_000, 0, "2026-04-01T10:00:00Z"), "append", "-entry", "p1")
	mustRun(t, data, reply("home-made-7b", 1000, 0, 0, "2026-04-01T11:00:00Z"), "append", "-entry", "p1")
	report := func() slapi.UsageSums {
		t.Helper()
		var rep slapi.UsageReport
		if err := json.Unmarshal([]byte(mustRun(t, data, "", "usage", "-json", "-by", "")), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Total.UsageSums
	}
	// reply's provider is "p": the table finds Opus by its name.
	if got := report(); math.Abs(got.Cost-(5+25)) > 1e-9 || got.UnpricedCalls != 1 || got.UnpricedTokens != 1000 {
		t.Fatalf("priced from the table: %+v", got)
	}
	out := mustRun(t, data, "", "usage", "-by", "model")
	if !strings.Contains(out, "$30.00 + ?") || !strings.Contains(out, "2,000,000") {
		t.Fatalf("usage's table:\n%s", out)
	}
	_, _, stderr := runIn(t, data, "", "usage", "-by", "model")
	if !strings.Contains(stderr, "1 calls (1,000 tokens) of models without a price are not in the cost") {
		t.Fatalf("usage's note: %q", stderr)
	}

	// Negotiated prices, and a price for the home-made model.
	os.WriteFile(filepath.Join(data, "prices.json"), []byte(`{"models":{"p/claude-opus-4-6":{"input_mtok":4,"output_mtok":20},"home-made-7b":{"input_mtok":1000,"output_mtok":1000}}}`), 0o644)
	if got := report(); math.Abs(got.Cost-(4+20+1)) > 1e-9 || got.UnpricedCalls != 0 {
		t.Fatalf("with prices.json: %+v", got)
	}
	var st struct{ Usage slapi.UsageReply }
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "stats", "-json", "p1")), &st); err != nil || math.Abs(st.Usage.Cost-25) > 1e-9 {
		t.Fatalf("stats with prices.json: %+v %v", st.Usage, err)
	}
	if out := mustRun(t, data, "", "prices", "-model", "home-made-7b"); !strings.Contains(out, "overrides    "+filepath.Join(data, "prices.json")) ||
		!strings.Contains(out, "input           1000") || !strings.Contains(out, "@pydantic/genai-prices") {
		t.Fatalf("prices:\n%s", out)
	}

	// A file that cannot be used is refused, by name, before anything is
	// priced with half of it.
	os.WriteFile(filepath.Join(data, "prices.json"), []byte(`{"models":{"m":{"input_mtok":1}}}`), 0o644)
	code, _, stderr := runIn(t, data, "", "usage", "-json")
	if code == 0 || !strings.Contains(stderr, "prices.json") || !strings.Contains(stderr, "output_mtok") {
		t.Fatalf("a bad prices.json: exit %d, %q", code, stderr)
	}
	os.Remove(filepath.Join(data, "prices.json"))
	if code, _, stderr := runIn(t, data, "", "prices", "-model", "home-made-7b"); code == 0 || !strings.Contains(stderr, "no price") {
		t.Fatalf("prices of an unknown model: exit %d, %q", code, stderr)
	}
	if got := report(); math.Abs(got.Cost-30) > 1e-9 || got.UnpricedCalls != 1 {
		t.Fatalf("prices.json removed: %+v", got)
	}
}

// A tenant's negotiated prices come before the node's, for its sessions
// alone; a tenant name that is no file name reads no file.
func TestTenantPrices(t *testing.T) {
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "prices"), 0o755)
	os.WriteFile(filepath.Join(data, "prices.json"), []byte(`{"models":{"m1":{"input_mtok":1,"output_mtok":1},"m2":{"input_mtok":2,"output_mtok":2}}}`), 0o644)
	os.WriteFile(filepath.Join(data, "prices", "acme.json"), []byte(`{"models":{"m1":{"input_mtok":10,"output_mtok":10}}}`), 0o644)
	os.WriteFile(filepath.Join(data, "x.json"), []byte(`not json`), 0o644)
	cost := func(tenant, model string) float64 {
		t.Helper()
		tab, err := pricesFor(data, tenant)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := tab.PricesOf("", model, time.Now())
		if !ok {
			t.Fatalf("%s: %s has no price", tenant, model)
		}
		return p.Input.Base
	}
	if cost("", "m1") != 1 || cost("acme", "m1") != 10 || cost("acme", "m2") != 2 || cost("bob", "m1") != 1 {
		t.Fatal("a tenant's prices are not before the node's, or reach another tenant")
	}
	a, _ := pricesFor(data, "acme")
	b, _ := pricesFor(data, "bob")
	if a.Fingerprint() == b.Fingerprint() {
		t.Fatal("two tenants' tables share a fingerprint: one index would keep the other's costs")
	}
	if _, err := pricesFor(data, "../x"); err != nil {
		t.Fatalf("a tenant name with a path read a file: %v", err)
	}
}
