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
}

type verb struct {
	summary string
	run     func(ctx context.Context, e env) error
}

var verbs = map[string]verb{
	"demo":    {"create a session, branch, compact and print its tree and context", runDemo},
	"tree":    {"print a session file's tree with labels and the leaf marked", runTree},
	"context": {"print the context of a session file's leaf as JSON", runContext},
	"stats":   {"print message, token and cost totals of a session file", runStats},
	"check":   {"load a session file and report every bad line", runCheck},
}

// errUsage marks errors that should be followed by the verb's usage.
var errUsage = errors.New("usage")

// Run executes one command line and returns the process exit code: 0 on
// success, 1 on failure, 2 on bad usage. Errors are one line on stderr.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sessionlog: unknown verb %q (try: sessionlog help)\n", args[0])
		return 2
	}
	err := v.run(ctx, env{args: args[1:], stdin: stdin, stdout: stdout, stderr: stderr})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "sessionlog %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stderr, "sessionlog %s: %s\n", args[0], oneLine(err.Error()))
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sessionlog <verb> [flags] [args]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, verbs[n].summary)
	}
}

func newFlags(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// oneArg parses flags and requires exactly one positional argument.
func oneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", err
		}
		return "", fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != 1 {
		return "", fmt.Errorf("%w: want one %s, got %d arguments", errUsage, what, fs.NArg())
	}
	return fs.Arg(0), nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " | ") }
