package main

import (
	"context"
	"fmt"
	"os"
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
	if *searchSessions > 0 {
		cfg.SearchSessions = *searchSessions
	} else if !*quick && slices.Contains(cfg.Only, "search") {
		cfg.SearchSessions = 10000
	}
	if *mcpOps > 0 {
		cfg.MCPOps = *mcpOps
	} else if slices.Contains(cfg.Only, "mcp") {
		cfg.MCPOps = 500
		if *quick {
			cfg.MCPOps = 20
		}
	}
	if cfg.MCPOps > 0 {
		cfg.MCPSessions = 50
	}
	if *langgraph > 0 {
		cfg.LangGraphOps = *langgraph
	} else if slices.Contains(cfg.Only, "langgraph") {
		cfg.LangGraphOps = 300
		if *quick {
			cfg.LangGraphOps = 20
		}
	}
	if *searchEntries > 0 {
		cfg.SearchEntries = *searchEntries
	}
	if *backups > 0 {
		cfg.BackupSessions = *backups
	}
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	r.Table(e.stdout)
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
