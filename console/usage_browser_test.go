package console_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentcore/sessionlog/api"
)

// reply is an assistant message of provider/model at a time, with usage.
func reply(model, at string, input, output int, cost float64) map[string]any {
	prov, name, _ := strings.Cut(model, "/")
	return map[string]any{"type": "message", "timestamp": at, "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": "done"}}, "provider": prov, "model": name, "stopReason": "stop",
		"usage": map[string]any{"input": input, "output": output, "totalTokens": input + output, "cost": map[string]any{"total": cost}}}}
}

// The usage page, in a real browser: the totals, charts drawn by
// Chart.js from the service's reports (their figures the reports'), the
// tables beneath, a hostile model name shown as text, the filters and a
// click on a project's bar.
func TestUsageInBrowser(t *testing.T) {
	s := startStack(t)
	ctx := browser(t)
	dir := artifacts(t)
	const evil = "evil/<img src=x onerror=window.pwned=1>\u202Egnp.exe"
	for _, c := range []struct{ id, cwd, source string }{{"a1", "/work/a", ""}, {"a2", "/work/a/sub", "claude-code"}, {"b1", "/work/b", "codex"}} {
		req := api.CreateRequest{ID: c.id, Cwd: c.cwd}
		if c.source != "" {
			req.Metadata = []byte(`{"source":"` + c.source + `"}`)
		}
		if err := s.client.Call(context.Background(), api.OpCreate, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.append(t, "a1", user("go"), reply("anthropic/claude-sonnet-4", "2026-03-01T10:00:00Z", 1000, 100, 0.5),
		reply("openai/gpt-5", "2026-03-02T10:00:00Z", 2000, 200, 1.25))
	s.append(t, "a2", user("go"), reply("anthropic/claude-sonnet-4", "2026-03-02T11:00:00Z", 500, 50, 0.25))
	s.append(t, "b1", user("go"), reply(evil, "2026-03-02T12:00:00Z", 10, 1, 2))
	if err := s.ix.CaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.Click(chromedp.CSS(`#nav-usage`)),
		chromedp.WaitVisible(chromedp.CSS(`#usage-by-model`)),
		poll(`!!Chart.getChart('chart-cost') && !!Chart.getChart('chart-agents')`),
		shot(t, dir, "6-usage"),
	)
	if err != nil {
		t.Fatalf("usage page: %v\n%s", err, page(ctx))
	}
	if got := text(ctx, t, "#usage-total"); !strings.Contains(got, "$4.00") || !strings.Contains(got, "3,861") || !strings.Contains(got, "4") {
		t.Fatalf("totals: %q", got)
	}
	// The stacked bars hold every dollar, on the two days.
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => { const c = Chart.getChart('chart-cost');
		return { labels: c.data.labels, sum: c.data.datasets.flatMap(d => d.data).reduce((a, b) => a + b, 0),
			agents: Chart.getChart('chart-agents').data.labels, perTurn: Chart.getChart('chart-per-turn').data.datasets[0].data }; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(drawn["labels"]) != "[2026-03-01 2026-03-02]" || math.Abs(drawn["sum"].(float64)-4) > 1e-9 ||
		fmt.Sprint(drawn["agents"]) != "[claude-code codex pi]" || fmt.Sprint(drawn["perTurn"]) != "[1100 920.3333333333334]" {
		t.Fatalf("charts drawn: %v", drawn)
	}
	// The hostile name is text: no element made of it, no script run,
	// its override shown as U+FFFD.
	hostile, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.querySelectorAll('main img').length, window.pwned === undefined,
		document.getElementById('usage-by-model').textContent.includes('\u202E'), document.getElementById('usage-by-model').textContent.includes('\uFFFDgnp.exe')].join(' ')`))
	if err != nil || hostile != "0 true false true" {
		t.Fatalf("hostile model name: %q %v", hostile, err)
	}
	// The filters narrow every chart and table.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#usage-filters input[name=project]`), "/work/a"),
		chromedp.Click(chromedp.CSS(`#usage-filters button`)),
		poll(`location.hash.includes('project=%2Fwork%2Fa') && !!document.getElementById('usage-by-project') && document.querySelectorAll('#usage-by-project tbody tr').length === 2`),
	)
	if err != nil {
		t.Fatalf("filter by project: %v\n%s", err, page(ctx))
	}
	if got := text(ctx, t, "#usage-total"); !strings.Contains(got, "$2.00") {
		t.Fatalf("totals of /work/a: %q", got)
	}
	// A project's bar opens that project alone.
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/usage?period=month"),
		poll(`!!Chart.getChart('chart-projects') && document.querySelectorAll('#usage-by-project tbody tr').length === 3`),
		poll(`(Chart.getChart('chart-projects').options.onClick(null, [{ index: 0 }]), true)`),
		poll(`decodeURIComponent(location.hash).includes('project=/work/b') && document.querySelectorAll('#usage-by-project tbody tr').length === 1`),
		shot(t, dir, "7-usage-project"),
	)
	if err != nil {
		t.Fatalf("a project's bar: %v\n%s", err, page(ctx))
	}
	if labels, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Chart.getChart('chart-cost').data.labels.join(',')`)); err != nil || labels != "2026-03" {
		t.Fatalf("by month: %q %v", labels, err)
	}

	// Months later, a call of a model no price table knows: the days
	// between are on the axis (a gap is a gap, and the line breaks
	// there), and the cost says part of it is unknown rather than free.
	s.append(t, "b1", reply("nobody/unknown-model", "2026-06-01T10:00:00Z", 1000, 10, 0))
	if err := s.ix.CaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/usage?period=day"),
		poll(`!!Chart.getChart('chart-cost') && Chart.getChart('chart-cost').data.labels.length > 2`),
		shot(t, dir, "8-usage-months"),
	)
	if err != nil {
		t.Fatalf("usage over months: %v\n%s", err, page(ctx))
	}
	axis, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => { const c = Chart.getChart('chart-cost'), l = c.data.labels;
		const line = Chart.getChart('chart-per-turn').data.datasets[0].data;
		return { n: l.length, first: l[0], last: l[l.length - 1], gaps: line.filter(v => v === null).length, drawn: line.filter(v => v !== null).length }; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if axis["n"] != float64(93) || axis["first"] != "2026-03-01" || axis["last"] != "2026-06-01" || axis["gaps"] != float64(90) || axis["drawn"] != float64(3) {
		t.Fatalf("the time axis: %v", axis)
	}
	if got := text(ctx, t, "#usage-total"); !strings.Contains(got, "$4.00 + unknown") || !strings.Contains(got, "tokens without a price") {
		t.Fatalf("totals with a model without a price: %q", got)
	}
	if got := text(ctx, t, "#usage-by-model"); !strings.Contains(got, "nobody/unknown-model") || !strings.Contains(got, "unknown") {
		t.Fatalf("the model without a price: %q", got)
	}
}
