package main

import (
	"context"

	"github.com/agentcore/sessionlog/session"
)

func runRemove(ctx context.Context, e env) error {
	fs := newFlags("rm", e)
	rf := addRepoFlags(fs)
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error { return repo.Delete(ctx, args[0]) })
}
