package main

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
)

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
		if err := lifecycle.Import(ctx, repo, h, ld.Tree); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\t%d entries\n", h.ID, ld.Tree.Len())
		return nil
	})
}
