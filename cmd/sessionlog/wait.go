package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

// runWait blocks until a tracker of the session has applied a sequence an
// append returned (read-your-writes from another process or machine), then
// prints the session's leaf.
func runWait(ctx context.Context, e env) error {
	fs := newFlags("wait", e)
	rf := addRepoFlags(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	args, err := parseArgs(fs, e.args, 2, "a session id and a sequence")
	if err != nil {
		return err
	}
	seq, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil || seq == 0 {
		return usageError("sequence %q is not a positive integer", args[1])
	}
	if rf.files != "" {
		return usageError("wait needs JetStream, not -files")
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		b, ok := repo.(*stream.Backend)
		if !ok {
			return errors.New("wait needs the JetStream backend")
		}
		wctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		rc := tracker.DefaultConfig()
		rc.Session = args[0]
		rc.WriteSnapshots = false
		r, err := tracker.Start(wctx, b, rc)
		if err != nil {
			return err
		}
		defer r.Close(context.WithoutCancel(ctx))
		if err := r.WaitFor(wctx, args[0], seq); err != nil {
			return err
		}
		return r.Read(wctx, args[0], func(t *session.Tree) error {
			fmt.Fprintln(e.stdout, t.Leaf())
			return nil
		})
	})
}
