package main

import (
	"context"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

// openFile opens a session file read-only for the display verbs.
func openFile(ctx context.Context, path string, lenient bool) (*filestore.Store, *session.Session, error) {
	cfg := filestore.DefaultConfig()
	cfg.ReadOnly = true
	if lenient {
		cfg.Mode = filestore.Lenient
	}
	s, err := filestore.Open(ctx, path, cfg)
	if err != nil {
		return nil, nil, err
	}
	sess, err := session.New(s, system.Config())
	if err != nil {
		s.Close(ctx)
		return nil, nil, err
	}
	return s, sess, nil
}
