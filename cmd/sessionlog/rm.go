package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// runRemove deletes a session and says what went with it.
func runRemove(ctx context.Context, e env) error {
	fs := newFlags("rm", e)
	rf := addRepoFlags(fs)
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	id := args[0]
	return withRepo(ctx, rf, func(repo session.Repo) error {
		b, ok := repo.(*stream.Backend)
		if !ok {
			if err := repo.Delete(ctx, id); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted %s\n", id)
			return nil
		}
		rep, err := b.DeleteSession(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "deleted %s: %d messages, %d snapshot objects, %d blobs only it named", id, rep.Messages, rep.Snapshots, rep.BlobsDeleted)
		if rep.BlobsShared > 0 {
			fmt.Fprintf(e.stdout, "; kept %d blobs other sessions name", rep.BlobsShared)
		}
		if rep.BlobsYoung > 0 {
			fmt.Fprintf(e.stdout, "; %d blobs used within the grace period (%v) are left to collection, which removes them once it has passed", rep.BlobsYoung, b.Blobs().Grace())
		}
		fmt.Fprintln(e.stdout)
		return nil
	})
}
