package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session"
)

// importBatch is how many entries go in one atomic append.
const importBatch = 1000

func runImport(ctx context.Context, e env) error {
	fs := newFlags("import", e)
	rf := addRepoFlags(fs)
	id := fs.String("id", "", "session id to import as (default: the file's)")
	lenient := fs.Bool("lenient", false, "skip bad lines (listed on stderr) instead of refusing the file")
	args, err := parseArgs(fs, e.args, 1, "one .jsonl file")
	if err != nil {
		return err
	}
	data, err := filestore.ReadFile(args[0], 0)
	if err != nil {
		return err
	}
	mode := codec.Strict
	if *lenient {
		mode = codec.Lenient
	}
	ld, err := codec.DecodeFile(data, args[0], mode, codec.WithRunner(parallel.Lines))
	if err != nil {
		return err
	}
	for _, is := range ld.Issues {
		fmt.Fprintf(e.stderr, "skipped %v\n", is)
	}
	h := ld.Tree.Header()
	if *id != "" {
		h.ID = *id
	}
	if err := session.ValidateSessionID(h.ID); err != nil {
		return fmt.Errorf("%w (pass -id to import under another id)", err)
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		st, err := repo.Create(ctx, h)
		if err != nil {
			return err
		}
		err = importEntries(ctx, st, ld.Tree)
		if cerr := st.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil {
			// Leave no half-imported session behind.
			return errors.Join(err, repo.Delete(context.WithoutCancel(ctx), h.ID))
		}
		fmt.Fprintf(e.stdout, "%s\t%d entries\n", h.ID, ld.Tree.Len())
		return nil
	})
}

func importEntries(ctx context.Context, st session.Store, t *session.Tree) error {
	entries, err := t.Entries()
	if err != nil {
		return err
	}
	for len(entries) > 0 {
		n := min(len(entries), importBatch)
		if err := session.AppendAll(ctx, st, entries[:n]); err != nil {
			return err
		}
		entries = entries[n:]
	}
	// A file whose lines were not in parent-first order names a leaf the
	// append order does not give: record it as a move.
	leaf, err := st.Leaf(ctx)
	if err != nil || leaf == t.Leaf() {
		return err
	}
	s, err := session.New(st, sysConfig())
	if err != nil {
		return err
	}
	_, err = s.MoveTo(ctx, t.Leaf())
	return err
}
