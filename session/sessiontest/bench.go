package sessiontest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// ReportLatency reports the p50 and p99 of a benchmark's per-operation
// latencies as p50-µs and p99-µs.
func ReportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// Timed runs op once per benchmark iteration, timing each, and reports
// the latencies as ReportLatency does, and the process's CPU time an
// operation as cpu-µs (where the OS tells it): on a machine of few cores
// shared with an in-process server, the CPU an operation costs is what
// its latency grows by under load.
func Timed(b *testing.B, op func() error) {
	lat := make([]time.Duration, 0, b.N)
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	if cpu1, ok := processCPU(); ok && cpuOK && len(lat) > 0 {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(len(lat)), "cpu-µs")
	}
	ReportLatency(b, lat)
}

// TimedAppends appends a user message of text to st once per benchmark
// iteration, as Timed reports.
func TimedAppends(b *testing.B, st session.Store, text string) {
	sess, err := session.New(st, TestConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	Timed(b, func() error {
		_, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(text)})
		return err
	})
}
