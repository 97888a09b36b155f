package main

import (
	"bytes"
	"context"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/console"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
)

func runExport(ctx context.Context, e env) error {
	fs := newFlags("export", e)
	rf := addRepoFlags(fs)
	out := fs.String("o", "", "write to this file (atomically) instead of stdout")
	asHTML := fs.Bool("html", false, "a self-contained HTML page (context, tree, images), readable offline, instead of a pi file")
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
		var data []byte
		if *asHTML {
			data, err = exportHTML(ctx, s, h, entries)
		} else {
			data, err = codec.EncodeFile(&h, entries)
		}
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

// exportHTML renders the session's tree, rebuilt from its entries (any
// store), with its leaf.
func exportHTML(ctx context.Context, s *session.Session, h session.Header, entries []*session.Entry) ([]byte, error) {
	t := session.NewTree(h)
	t.Grow(len(entries))
	for _, e := range entries {
		if err := t.Apply(e); err != nil {
			return nil, err
		}
	}
	leaf, err := s.Leaf(ctx)
	if err != nil {
		return nil, err
	}
	if err := t.SetLeaf(leaf); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := console.ExportHTML(&buf, h, t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
