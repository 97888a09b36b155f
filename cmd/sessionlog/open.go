package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

func sysConfig() session.Config { return system.Config() }

// openFile opens a session file read-only for the display verbs.
func openFile(ctx context.Context, path string, lenient bool) (*filestore.Store, *session.Session, error) {
	cfg := filestore.DefaultConfig()
	cfg.ReadOnly = true
	if lenient {
		cfg.Mode = codec.Lenient
	}
	s, err := filestore.Open(ctx, path, cfg)
	if err != nil {
		return nil, nil, err
	}
	sess, err := session.New(s, sysConfig())
	if err != nil {
		s.Close(ctx)
		return nil, nil, err
	}
	return s, sess, nil
}

// sessionVerb parses the flags of a verb that reads one session — a file
// (path ending in .jsonl) or a session id in the repository — and runs fn
// on it.
func sessionVerb(ctx context.Context, e env, name string, addFlags func(fs *flag.FlagSet), fn func(sess *session.Session) error) error {
	fs := newFlags(name, e)
	lenient := fs.Bool("lenient", false, "for a file: skip bad lines instead of refusing the file")
	rf := addRepoFlags(fs)
	if addFlags != nil {
		addFlags(fs)
	}
	arg, err := oneArg(fs, e.args, "session id or .jsonl file")
	if err != nil {
		return err
	}
	if !isFile(arg) {
		return withSession(ctx, rf, arg, fn)
	}
	s, sess, err := openFile(ctx, arg, *lenient)
	if err != nil {
		return err
	}
	defer s.Close(ctx)
	// What a lenient read left out, in line order, before the output.
	for _, is := range byLine(s.Issues()) {
		fmt.Fprintf(e.stderr, "skipped %v\n", is)
	}
	return fn(sess)
}

// parseArgs parses flags and requires exactly n positional arguments (n
// < 0: one or more).
func parseArgs(fs *flag.FlagSet, args []string, n int, what string) ([]string, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if (n >= 0 && fs.NArg() != n) || (n < 0 && fs.NArg() == 0) {
		return nil, usageError("want %s, got %d arguments", what, fs.NArg())
	}
	return fs.Args(), nil
}
