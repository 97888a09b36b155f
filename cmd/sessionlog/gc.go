package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// runGC collects the blobs no entry names (serve does it hourly; a data
// dir used without serve needs this now and then).
func runGC(ctx context.Context, e env) error {
	fs := newFlags("gc", e)
	rf := addRepoFlags(fs)
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		b, ok := repo.(*stream.Backend)
		if !ok {
			return usageError("gc collects the blobs of a JetStream deployment; files keep their content inline")
		}
		st, err := b.CollectBlobs(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "blobs %d: %d deleted (%d bytes), %d named by entries, %d within the grace period of %v, %d touched meanwhile\n",
			st.Blobs, st.Deleted, st.Freed, st.Referenced, st.Young, b.Blobs().Grace(), st.Raced)
		return nil
	})
}
