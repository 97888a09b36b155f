package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// runGC collects the blobs no entry names and the snapshot objects no
// head names (serve does it hourly; a data dir used without serve needs
// this now and then).
func runGC(ctx context.Context, e env) error {
	fs := newFlags("gc", e)
	rf := addRepoFlags(fs)
	grace := fs.Duration("snapshot-grace", 0, "collect snapshot objects no head names once older than this (default: the blob grace period); shorter than a save in flight costs that snapshot, not data")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	if *grace < 0 {
		return usageError("-snapshot-grace %v is negative", *grace)
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
		var opts []stream.CollectOption
		if *grace > 0 {
			opts = append(opts, stream.WithGrace(*grace))
		}
		sn, err := b.CollectSnapshots(ctx, opts...)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "snapshot objects %d: %d deleted (%d bytes), %d named by heads, %d younger than the grace period, %d of heads this version cannot read\n",
			sn.Objects, sn.Deleted, sn.Freed, sn.Named, sn.Young, sn.Protected)
		return nil
	})
}
