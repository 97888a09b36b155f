package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/agentcore/sessionlog/bench"
)

// runBench measures sessionlog against raw JetStream (and a JSONL file)
// in one run on embedded nodes, and prints the table of ratios.
func runBench(ctx context.Context, e env) error {
	fs := newFlags("bench", e)
	quick := fs.Bool("quick", false, "a small run (seconds) that exercises every measurement")
	md := fs.String("md", "", "also write the results as Markdown to this file")
	dir := fs.String("dir", "", "where the nodes keep their data (default: a temporary dir, removed after)")
	ops := fs.Int("ops", 0, "appends per latency measurement (default 2000; 50 with -quick)")
	only := fs.String("only", "", "measure only these parts, comma-separated: "+strings.Join(bench.Parts, ", "))
	many := fs.Int("sessions", 0, "also generate this many sessions (20 entries each) and measure what they cost: server memory and disk per session, listing, opening (the 'sessions' part; a million takes minutes)")
	searchSessions := fs.Int("search-sessions", 0, "also index and search this many sessions of -search-entries messages (the 'search' part; -only search alone: 10,000, a million entries, minutes)")
	searchEntries := fs.Int("search-entries", 0, "messages per session in the 'search' part (default 100)")
	backups := fs.Int("backup-sessions", 0, "also back up and restore this many sessions of 100 KB (the 'backup' part; 10,000 is 1 GB, minutes)")
	mcpOps := fs.Int("mcp-ops", 0, "also time the MCP tools search_sessions and get_context over stdio and HTTP against the service's operations, this many calls each (the 'mcp' part; -only mcp alone: 500)")
	langgraph := fs.Int("langgraph-ops", 0, "also time LangGraph's savers, ours against PostgresSaver on a PostgreSQL the run starts, on a thread of this many checkpoints (the 'langgraph' part; -only langgraph alone: 300; needs node, npm and PostgreSQL)")
	streamChunks := fs.Int("stream-chunks", 0, "also time resumable streams (the AI SDK's), ours against resumable-stream on a Redis the run starts, with generations of this many chunks (the 'aisdk' part; -only aisdk alone: 20,000; needs node, npm and redis-server)")
	adkSessions := fs.Int("adk-sessions", 0, "also time Google ADK's session services, ours against its database service on a PostgreSQL the run starts and its in-memory one: this many sessions listed, a session of 5,000 events loaded (the 'adk' part; -only adk alone: 10,000; needs node, npm and PostgreSQL)")
	edgeEntries := fs.Int("edge-entries", 0, "entries an edge node writes offline before it syncs with its hub in the 'edges' part (default 100,000; 2,000 with -quick)")
	transcriptFile := fs.String("transcript", bench.DefaultTranscript, "the Claude Code transcript the 'transcripts' part imports and follows")
	update := fs.String("update", "", "also replace the Last run section of this Markdown file (BENCHMARKS.md: between its markers) with this run's tables, headed by this command")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it): what is ours above each floor")
	pi := fs.String("pi", "", "node_modules dir with @earendil-works/pi-coding-agent (or the older @mariozechner one): also time pi's own loader on the same files (needs node)")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	cfg := bench.DefaultConfig()
	if *quick {
		cfg = bench.QuickConfig()
	}
	if *ops > 0 {
		cfg.Ops = *ops
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	cfg.Dir, cfg.Progress, cfg.PiModules, cfg.ManySessions = *dir, e.stderr, *pi, *many
	cfg.TranscriptFile = *transcriptFile
	if *edgeEntries > 0 {
		cfg.EdgeEntries = *edgeEntries
	}
	// An opt-in part runs when its flag sizes it, or when -only names it
	// (at its full size, or its quick one with -quick); otherwise it keeps
	// the size the config gives it.
	optIn := func(set int, part string, full, quickSize, current int) int {
		switch {
		case set > 0:
			return set
		case !slices.Contains(cfg.Only, part):
			return current
		case *quick:
			return quickSize
		}
		return full
	}
	cfg.SearchSessions = optIn(*searchSessions, "search", 10000, cfg.SearchSessions, cfg.SearchSessions)
	cfg.MCPOps = optIn(*mcpOps, "mcp", 500, 20, cfg.MCPOps)
	cfg.LangGraphOps = optIn(*langgraph, "langgraph", 300, 20, cfg.LangGraphOps)
	if cfg.StreamChunks = optIn(*streamChunks, "aisdk", 20000, 500, cfg.StreamChunks); cfg.StreamChunks > 0 {
		cfg.StreamResumes = min(200, max(20, cfg.StreamChunks/100))
	}
	if cfg.ADKSessions = optIn(*adkSessions, "adk", 10000, 200, cfg.ADKSessions); cfg.ADKSessions > 0 {
		cfg.ADKEvents = 5000
		if *quick {
			cfg.ADKEvents = 200
		}
	}
	if cfg.MCPOps > 0 {
		cfg.MCPSessions = 50
	}
	if *searchEntries > 0 {
		cfg.SearchEntries = *searchEntries
	}
	if *backups > 0 {
		cfg.BackupSessions = *backups
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	r.Table(e.stdout)
	if *update != "" {
		if err := bench.UpdateLastRun(*update, r, bench.CommandLine(e.args)); err != nil {
			return err
		}
	}
	if *md != "" {
		f, err := os.Create(*md)
		if err != nil {
			return err
		}
		r.Markdown(f)
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", *md, err)
		}
	}
	return nil
}
