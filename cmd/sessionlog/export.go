package main

import (
	"context"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
)

func runExport(ctx context.Context, e env) error {
	fs := newFlags("export", e)
	rf := addRepoFlags(fs)
	out := fs.String("o", "", "write to this file (atomically) instead of stdout")
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		h, err := s.Header(ctx)
		if err != nil {
			return err
		}
		entries, err := s.Store().Entries(ctx)
		if err != nil {
			return err
		}
		data, err := codec.EncodeFile(&h, entries)
		if err != nil {
			return err
		}
		if *out == "" {
			_, err = e.stdout.Write(data)
			return err
		}
		return filestore.WriteAtomic(*out, data, 0o644)
	})
}
