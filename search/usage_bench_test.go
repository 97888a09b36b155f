package search

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
)

// BenchmarkUsageReport sums a table as the bench's million messages fill
// it: 10,000 sessions over 90 days in 50 projects by four agents, each
// with replies of two of six models over two or three days.
func BenchmarkUsageReport(b *testing.B) {
	x := &Index{usages: newUsageTable()}
	x.cfg = DefaultConfig("")
	epoch := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	agents := []string{"pi", "claude-code", "codex", "langgraph"}
	for i := range 10000 {
		su := &sessionUsage{Agent: agents[i%4], Cwd: fmt.Sprintf("/home/dev/project-%02d", i%50), index: map[cellKey]int{}}
		day := epoch.Add(time.Duration(i%90) * 24 * time.Hour)
		for d := range 3 {
			for m := range 2 {
				add := api.UsageSums{Turns: 10, Input: 1000, Output: 100, Tokens: 1100, Cost: 0.1}
				su.cell(day.Add(time.Duration(d)*24*time.Hour).Format(time.DateOnly), fmt.Sprintf("p/model-%d", (i+m)%6)).Add(add)
				su.total.Add(add)
			}
		}
		x.usages.sessions[fmt.Sprintf("srch-%07d", i)] = su
	}
	for _, c := range []struct {
		name string
		req  api.UsageRequest
	}{
		{"day-model", api.UsageRequest{}},
		{"project", api.UsageRequest{By: []string{api.UsageByProject}}},
		{"month-agent", api.UsageRequest{By: []string{api.UsageByMonth, api.UsageByAgent}}},
		{"model-july", api.UsageRequest{By: []string{api.UsageByModel}, Since: "2026-07-01", Until: "2026-07-31"}},
		{"one-project-days", api.UsageRequest{By: []string{api.UsageByDay}, Project: "/home/dev/project-07"}},
		{"session", api.UsageRequest{By: []string{api.UsageBySession}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := x.Usage(context.Background(), c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
