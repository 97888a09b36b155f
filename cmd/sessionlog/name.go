package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
)

func runName(ctx context.Context, e env) error {
	fs := newFlags("name", e)
	rf := addRepoFlags(fs)
	args, err := parseArgs(fs, e.args, 2, "a session id and a name (\"\" clears it)")
	if err != nil {
		return err
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		entry, err := s.SetName(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, entry.ID)
		return nil
	})
}
