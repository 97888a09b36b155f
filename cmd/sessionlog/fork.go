package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
)

func runFork(ctx context.Context, e env) error {
	fs := newFlags("fork", e)
	rf := addRepoFlags(fs)
	at := fs.String("at", "", "copy the branch down to and including this entry")
	before := fs.String("before", "", "copy the branch up to this user message, not including it")
	id := fs.String("id", "", "id of the new session (default: a random one)")
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	p := session.FromLeaf()
	switch {
	case *at != "" && *before != "":
		return usageError("-at and -before exclude each other")
	case *at != "":
		p = session.At(*at)
	case *before != "":
		p = session.Before(*before)
	}
	h := newHeader(*id, "")
	return withRepo(ctx, rf, func(repo session.Repo) error {
		st, sel, err := repo.Fork(ctx, args[0], p, h)
		if err != nil {
			return err
		}
		defer st.Close(ctx)
		fmt.Fprintln(e.stdout, h.ID)
		if sel.Before != nil && sel.Before.Message != nil {
			fmt.Fprintf(e.stderr, "forked before: %s\n", truncate(sel.Before.Message.Text(), 200))
		}
		return nil
	})
}
