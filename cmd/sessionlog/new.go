package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

func runNew(ctx context.Context, e env) error {
	fs := newFlags("new", e)
	rf := addRepoFlags(fs)
	rf.create = true
	id := fs.String("id", "", "session id (default: a random one)")
	cwd := fs.String("cwd", "", "working directory recorded in the header (default: the current one)")
	name := fs.String("name", "", "display name")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	h := newHeader(*id, *cwd)
	return withRepo(ctx, rf, func(repo session.Repo) error {
		st, err := repo.Create(ctx, h)
		if err != nil {
			return err
		}
		defer st.Close(ctx)
		if *name != "" {
			s, err := session.New(st, sysConfig())
			if err != nil {
				return err
			}
			if _, err := s.SetName(ctx, *name); err != nil {
				return err
			}
		}
		fmt.Fprintln(e.stdout, h.ID)
		return nil
	})
}

// newHeader makes the header of a new session: a random id and the
// current directory unless given.
func newHeader(id, cwd string) session.Header {
	if id == "" {
		id = system.SessionID()
	}
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	return session.Header{Version: session.CurrentVersion, ID: id, Timestamp: session.FormatTime(system.Clock{}.Now()), Cwd: cwd}
}
