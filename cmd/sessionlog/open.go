package main

import (
	"context"
	"flag"

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

// fileVerb parses the flags common to the verbs that read one session
// file, opens it read-only, and runs fn on it.
func fileVerb(ctx context.Context, e env, name string, addFlags func(fs *flag.FlagSet), fn func(sess *session.Session) error) error {
	fs := newFlags(name, e)
	lenient := fs.Bool("lenient", false, "skip bad lines instead of refusing the file")
	if addFlags != nil {
		addFlags(fs)
	}
	path, err := oneArg(fs, e.args, "session file")
	if err != nil {
		return err
	}
	s, sess, err := openFile(ctx, path, *lenient)
	if err != nil {
		return err
	}
	defer s.Close(ctx)
	return fn(sess)
}
