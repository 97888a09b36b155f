package bench_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/bench"
)

// A quick run measures everything it promises, each beside a baseline.
// (Figures are not asserted: machines are noisy.)
func TestQuickRunReportsEveryMeasurement(t *testing.T) {
	cfg := bench.QuickConfig()
	cfg.Dir = t.TempDir()
	cfg.TranscriptFile = filepath.Join("..", bench.DefaultTranscript)
	cfg.PiModules = os.Getenv("SESSIONLOG_PI_MODULES") // npm install @earendil-works/pi-coding-agent
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"append latency p50", "append latency p99", "appends per second", "throughput over 1 session(s)",
		"from the stream, no snapshot", "open from a snapshot", "snapshot + tail, then context", "from a pi JSONL file",
		"first call of a process", "later calls", "Leaf p99", "BuildContext p99", "path of 1000 entries", "path of 3000 entries", "heap per materialized entry",
		"throughput, one node", "throughput, three-node cluster (R3)", "against a checked loop",
		"member stored apart", "members apart (cold)", "append p50 of an entry with a new image", "bytes stored (entries + blobs)",
		"context by reference", "resolve the context's", "compacted (keeps 200)", "(new backend), median", "dry run:", "run: archive to the object store", "full backup", "restore into an empty deployment",
		"search p50", "search p99", "index lag p50", "index lag p99",
		"decode into entries", "import into the store", "follow lag p50", "follow lag p99",
	} {
		found := false
		for _, row := range r.Rows {
			if strings.Contains(row.Name, want) {
				found = true
				first := strings.HasPrefix(row.Name, "path of 100 ")
				if row.Ours <= 0 || (!first && (row.Base <= 0 || row.BaseName == "")) {
					t.Errorf("%s/%s: ours %v, baseline %v (%q)", row.Group, row.Name, row.Ours, row.Base, row.BaseName)
				}
			}
		}
		if !found {
			t.Errorf("no row %q", want)
		}
	}
	var table, md bytes.Buffer
	r.Table(&table)
	r.Markdown(&md)
	if !strings.Contains(table.String(), "ours/base") || !strings.Contains(md.String(), "| append latency p50 |") {
		t.Fatalf("table:\n%s\nmarkdown:\n%s", table.String(), md.String())
	}
}

// The many-sessions part, small: every row, with figures that make sense.
func TestManySessionsPart(t *testing.T) {
	cfg := bench.QuickConfig()
	cfg.Dir, cfg.Only, cfg.ManySessions = t.TempDir(), []string{"sessions"}, 300
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"generated per second", "server memory per idle session", "disk per session", "list: first page, first call of a process",
		"list: a later page", "open a random session, p99", "raw: server memory per session", "raw: disk per session"}
	for _, name := range want {
		found := false
		for _, row := range r.Rows {
			if strings.HasPrefix(row.Name, name) {
				found = true
				if row.Ours <= 0 && !strings.Contains(name, "memory") { // memory may round to nothing when small
					t.Errorf("%s: %v", row.Name, row.Ours)
				}
			}
		}
		if !found {
			t.Errorf("no row %q", name)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		tweak   func(*bench.Config)
		wantErr bool
	}{
		{name: "default", tweak: func(*bench.Config) {}},
		{name: "no ops", tweak: func(c *bench.Config) { c.Ops = 0 }, wantErr: true},
		{name: "tiny payload", tweak: func(c *bench.Config) { c.PayloadBytes = 10 }, wantErr: true},
		{name: "no sizes", tweak: func(c *bench.Config) { c.Sizes = nil }, wantErr: true},
		{name: "zero sessions", tweak: func(c *bench.Config) { c.Sessions = []int{0} }, wantErr: true},
		{name: "no partition writers", tweak: func(c *bench.Config) { c.PartitionWriters = 0 }, wantErr: true},
		{name: "negative sessions to generate", tweak: func(c *bench.Config) { c.ManySessions = -1 }, wantErr: true},
		{name: "known parts", tweak: func(c *bench.Config) { c.Only = []string{"reads", "appends"} }},
		{name: "an unknown part", tweak: func(c *bench.Config) { c.Only = []string{"reads", "../etc"} }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := bench.DefaultConfig()
			tt.tweak(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, bench.ErrInvalidConfig)) {
				t.Fatalf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
