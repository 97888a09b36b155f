package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
)

func runMove(ctx context.Context, e env) error {
	fs := newFlags("move", e)
	rf := addRepoFlags(fs)
	root := fs.Bool("root", false, "move before the first entry (an empty context) instead of to TARGET")
	summary := fs.String("summary", "", "summary of the branch being left, written as a child of the target")
	n := 2
	if hasFlag(e.args, "root") {
		n = 1
	}
	args, err := parseArgs(fs, e.args, n, "a session id and a target entry id (or -root)")
	if err != nil {
		return err
	}
	target := ""
	if !*root {
		target = args[1]
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		var opts []session.MoveOption
		if *summary != "" {
			opts = append(opts, session.WithBranchSummary(*summary, nil, false))
		}
		entry, err := s.MoveTo(ctx, target, opts...)
		if err != nil {
			return err
		}
		if entry == nil {
			fmt.Fprintln(e.stderr, "the leaf is already there")
			return nil
		}
		fmt.Fprintln(e.stdout, entry.ID)
		return nil
	})
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "-"+name || a == "--"+name || a == "-"+name+"=true" || a == "--"+name+"=true" {
			return true
		}
	}
	return false
}
