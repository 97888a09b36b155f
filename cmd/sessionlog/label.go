package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
)

func runLabel(ctx context.Context, e env) error {
	fs := newFlags("label", e)
	rf := addRepoFlags(fs)
	if err := parseFlags(fs, e.args); err != nil {
		return err
	}
	args := fs.Args()
	if len(args) != 2 && len(args) != 3 {
		return usageError("want a session id, an entry id and a label (none clears it)")
	}
	label := ""
	if len(args) == 3 {
		label = args[2]
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		entry, err := s.SetLabel(ctx, args[1], label)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, entry.ID)
		return nil
	})
}
