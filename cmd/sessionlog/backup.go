package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
)

// runBackup copies every session, each at a cut, while writers go on.
func runBackup(ctx context.Context, e env) error {
	fs := newFlags("backup", e)
	rf := addRepoFlags(fs)
	base := fs.String("base", "", "an earlier backup: write only the sessions changed since (an incremental backup)")
	args, err := parseArgs(fs, e.args, 1, "the backup directory (new or empty)")
	if err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		start := time.Now()
		m, err := lifecycle.Backup(ctx, repo, args[0], lifecycle.BackupOptions{Base: *base})
		if err != nil {
			return err
		}
		entries, here := 0, 0
		for _, s := range m.Sessions {
			entries += s.Entries
			if s.In == "" {
				here++
			}
		}
		fmt.Fprintf(e.stdout, "%d sessions (%d entries) backed up to %s in %v; %d written, %d unchanged since the base\n",
			len(m.Sessions), entries, args[0], time.Since(start).Round(time.Millisecond), here, len(m.Sessions)-here)
		return nil
	})
}

// runRestore loads a backup into a deployment that holds none of its
// sessions.
func runRestore(ctx context.Context, e env) error {
	fs := newFlags("restore", e)
	rf := addRepoFlags(fs)
	rf.create = true
	args, err := parseArgs(fs, e.args, 1, "the backup directory")
	if err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		start := time.Now()
		rep, err := lifecycle.Restore(ctx, repo, args[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%d sessions (%d entries) restored from %s in %v, each checked against its digests\n",
			rep.Sessions, rep.Entries, args[0], time.Since(start).Round(time.Millisecond))
		return nil
	})
}
