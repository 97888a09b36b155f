package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// env is what a verb gets: its arguments and the process's streams.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// onFlags, when set, is given each flag set a verb makes (completion
	// and tests read a verb's flags through it: see verbFlags).
	onFlags func(*flag.FlagSet)
}

type verb struct {
	summary string
	run     func(ctx context.Context, e env) error
}

var verbs map[string]verb

func init() {
	verbs = map[string]verb{
		"demo":       {"play a session on the embedded node; print its tree, context and stats", runDemo},
		"serve":      {"run the embedded node with a client listener for other processes", runServe},
		"new":        {"create a session and print its id", runNew},
		"append":     {"append a message (flags, or JSON on stdin) and print its id", runAppend},
		"ls":         {"list sessions, most recently updated first (filters: -name -cwd -label -meta -since -until)", runList},
		"search":     {"find messages by their words across sessions, best first, with snippets", runSearch},
		"usage":      {"sum tokens and cost across sessions by day, month, model, project, agent or session, with averages per turn", runUsage},
		"prices":     {"say where the prices of model calls come from (the offline table, negotiated prices in prices.json) and what a model costs (-model)", runPrices},
		"tree":       {"print a session's tree with labels and the leaf marked", runTree},
		"show":       {"same as tree", runTree},
		"context":    {"print the context of a session's leaf as JSON", runContext},
		"stats":      {"print message, token and cost totals of a session", runStats},
		"move":       {"move a session's leaf (optionally with a branch summary)", runMove},
		"label":      {"label an entry (an empty label clears it)", runLabel},
		"name":       {"name a session", runName},
		"fork":       {"copy a branch into a new session", runFork},
		"rm":         {"delete a session", runRemove},
		"import":     {"import session files of pi, Claude Code or Codex, or directories of them (a whole ~/.claude/projects)", runImport},
		"resume":     {"put a session back where its agent keeps sessions here (Claude Code, Codex, pi), working directories mapped (-map FROM=TO), for claude --resume, codex resume or pi", runResume},
		"export":     {"export a session as a pi JSONL file (-format claude-code|codex: as it was imported; -html: one page)", runExport},
		"follow":     {"tail local agents' session directories (Claude Code, Codex, pi) into the log as they are written", runFollow},
		"gc":         {"delete the blobs no entry names, past their grace period (serve does it hourly)", runGC},
		"archive":    {"archive sessions (a compressed pi file and a manifest of digests); -delete removes them once archived", runArchive},
		"unarchive":  {"bring archived sessions back, each checked against its digests", runUnarchive},
		"backup":     {"copy every session, each at a recorded cut, while writers go on (-base: incremental)", runBackup},
		"restore":    {"load a backup into a deployment that holds none of its sessions, checked against its digests", runRestore},
		"retention":  {"archive or delete the sessions past a policy (-dry-run: say which and why)", runRetention},
		"check":      {"load a session file and report every bad line", runCheck},
		"watch":      {"print entries of some types from every session as JSON lines, from now (-from) or through a durable consumer (-durable)", runWatch},
		"wait":       {"wait until a session has applied a sequence (read-your-writes); print its leaf", runWait},
		"mcp":        {"serve sessions over the Model Context Protocol on stdio (list, search, contexts, trees, entries; -allow-writes: append, label) for agent hosts", runMCP},
		"status":     {"print a node's or a cluster's health in one screen: servers, partitions and leaders, followers' lag, streams, consumers, usage, warnings", runStatus},
		"probe":      {"ask a node's /readyz or /healthz; exit 0 only when it answers 200 (container healthchecks)", runProbe},
		"bench":      {"measure appends, opens, contexts and listing against raw JetStream; print ratios", runBench},
		"version":    {"print the release, the commit it was built from, and the formats it writes and reads (also --version)", runVersion},
		"completion": {"print a shell completion script: bash, zsh or fish (source <(sessionlog completion bash))", runCompletion},
	}
}

// exactOutput are the verbs whose stdout is data kept byte for byte.
var exactOutput = map[string]bool{"export": true, "mcp": true, "completion": true}

// errUsage marks errors that should be followed by the verb's usage.
var errUsage = errors.New("usage")

// Run executes one command line and returns the process exit code: 0 on
// success, 1 on failure, 2 on bad usage. Errors are one line on stderr.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stderr)
		return 2
	case args[0] == "help" && len(args) > 1:
		args = []string{args[1], "-h"} // help VERB is VERB -h
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		usage(stdout)
		return 0
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	v, ok := verbs[args[0]]
	if !ok {
		names := make([]string, 0, len(verbs))
		for n := range verbs {
			names = append(names, n)
		}
		sort.Strings(names)
		if c := closest(args[0], names); c != "" {
			fmt.Fprintf(stderr, "sessionlog: unknown verb %q: did you mean %q? (sessionlog help lists them)\n", args[0], c)
		} else {
			fmt.Fprintf(stderr, "sessionlog: unknown verb %q (try: sessionlog help)\n", args[0])
		}
		return 2
	}
	// What verbs print shows stored text rather than letting it act on a
	// terminal (visibleWriter); the verbs whose output is data to be kept
	// byte for byte (an export, MCP's protocol) print as they are.
	serr := newVisibleWriter(stderr)
	defer serr.Flush()
	out := stdout
	if !exactOutput[args[0]] {
		sout := newVisibleWriter(stdout)
		defer sout.Flush()
		out = sout
	}
	err := v.run(ctx, env{args: args[1:], stdin: stdin, stdout: out, stderr: serr})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(serr, "sessionlog %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(serr, "sessionlog %s: %s\n", args[0], oneLine(err.Error()))
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sessionlog <verb> [flags] [args]   (sessionlog help VERB, or VERB -h: that verb's flags)")
	fmt.Fprintln(w)
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, verbs[n].summary)
	}
}

func newFlags(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	// Help asked for goes to stdout (and exits 0); help after a mistake
	// goes to stderr with it.
	for _, a := range e.args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(e.stdout)
		}
		if a == "--" {
			break
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sessionlog %s [flags] [args]\n  %s\n\nflags:\n", name, verbs[name].summary)
		fs.PrintDefaults()
	}
	if e.onFlags != nil {
		e.onFlags(fs) // read once the verb returns, its flags all defined: see verbFlags
	}
	return fs
}

// parseFlags parses a verb's flags; flags may also follow the arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return fmt.Errorf("%w: %v%s", errUsage, err, flagHint(fs, err))
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// oneArg parses flags and requires exactly one positional argument.
func oneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	got, err := parseArgs(fs, args, 1, "one "+what)
	if err != nil {
		return "", err
	}
	return got[0], nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " | ") }
