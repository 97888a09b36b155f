package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// archiveFlags say where archives are kept: a directory, or the
// deployment's archive object store.
type archiveFlags struct{ dir string }

func addArchiveFlags(fs *flag.FlagSet) *archiveFlags {
	a := &archiveFlags{}
	fs.StringVar(&a.dir, "dir", "", "keep archives in this directory (default on JetStream: the object store "+lifecycle.ArchiveBucket+")")
	return a
}

// target opens where archives are kept for repo.
func (a *archiveFlags) target(ctx context.Context, repo session.Repo) (lifecycle.Target, error) {
	if a.dir != "" {
		return lifecycle.DirTarget{Dir: a.dir}, nil
	}
	b, ok := repo.(*stream.Backend)
	if !ok {
		return nil, usageError("sessions kept as files archive to a directory: pass -dir")
	}
	return lifecycle.OpenStoreTarget(ctx, b.JetStream(), lifecycle.ArchiveBucket, b.Config().Replicas)
}

// runArchive archives sessions, and deletes them once archived with
// -delete.
func runArchive(ctx context.Context, e env) error {
	fs := newFlags("archive", e)
	rf := addRepoFlags(fs)
	af := addArchiveFlags(fs)
	del := fs.Bool("delete", false, "delete each session once its archive is written and read back whole")
	ids, err := parseArgs(fs, e.args, -1, "session ids")
	if err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		target, err := af.target(ctx, repo)
		if err != nil {
			return err
		}
		for _, id := range ids {
			m, err := lifecycle.Archive(ctx, repo, id, target, time.Now())
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			what := ""
			if *del {
				// Deleted only once the archive reads back whole.
				if _, _, err := lifecycle.ReadArchive(ctx, target, id); err != nil {
					return fmt.Errorf("%s: archived, but it does not read back (not deleted): %w", id, err)
				}
				if err := repo.Delete(ctx, id); err != nil {
					return fmt.Errorf("%s: archived, not deleted: %w", id, err)
				}
				what = ", deleted"
			}
			fmt.Fprintf(e.stdout, "%s\t%d entries, %d bytes compressed to %s%s\n", id, m.Entries, m.GzipBytes, target.Describe(), what)
		}
		return nil
	})
}

// runUnarchive brings archived sessions back.
func runUnarchive(ctx context.Context, e env) error {
	fs := newFlags("unarchive", e)
	rf := addRepoFlags(fs)
	rf.create = true
	af := addArchiveFlags(fs)
	newID := fs.String("id", "", "bring it back under this id (default: its own; one session only)")
	ids, err := parseArgs(fs, e.args, -1, "session ids")
	if err != nil {
		return err
	}
	if *newID != "" && len(ids) > 1 {
		return usageError("-id names one session, and %d are given", len(ids))
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		target, err := af.target(ctx, repo)
		if err != nil {
			return err
		}
		for _, id := range ids {
			m, err := lifecycle.Unarchive(ctx, repo, target, id, *newID)
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			if *newID != "" {
				id = *newID
			}
			fmt.Fprintf(e.stdout, "%s\t%d entries, leaf %s, tree and context as archived at %s\n", id, m.Entries, m.Leaf, m.ArchivedAt)
		}
		return nil
	})
}
