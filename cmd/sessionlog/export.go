package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
		data, err := filestore.Encode(&h, entries)
		if err != nil {
			return err
		}
		if *out == "" {
			_, err = e.stdout.Write(data)
			return err
		}
		return writeAtomic(*out, data)
	})
}

// writeAtomic writes a file so that a crash leaves the old one or the new
// one, never a part.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
