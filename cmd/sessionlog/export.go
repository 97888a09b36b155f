package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/console"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

func runExport(ctx context.Context, e env) error {
	fs := newFlags("export", e)
	rf := addRepoFlags(fs)
	out := fs.String("o", "", "write to this file (atomically) instead of stdout (- is stdout)")
	asHTML := fs.Bool("html", false, "a self-contained HTML page (context, tree, images), readable offline, instead of a pi file")
	format := fs.String("format", "pi", "the file's format: pi, or claude-code or codex for a session imported from one (its lines, as they were)")
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	f, err := transcript.ParseFormat(*format)
	if err != nil {
		return usageError("%v", err)
	}
	if *asHTML && f != transcript.FormatPi {
		return usageError("-html and -format %s: choose one", *format)
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		h, entries, err := whole(ctx, s)
		if err != nil {
			return err
		}
		var data []byte
		switch {
		case *asHTML:
			data, err = exportHTML(ctx, s, h, entries)
		case f != transcript.FormatPi:
			var skipped int
			data, skipped, err = transcript.Export(f, entries)
			if err == nil && skipped > 0 {
				fmt.Fprintf(e.stderr, "%d entries are not %s lines (appended since the import): not written\n", skipped, f)
			}
		default:
			data, err = codec.EncodeFile(&h, entries)
		}
		if err != nil {
			return err
		}
		if *out == "" || *out == "-" {
			_, err = e.stdout.Write(data)
			return err
		}
		return filestore.WriteAtomic(*out, data, 0o644)
	})
}

// exportHTML renders the session's tree, rebuilt from its entries (any
// store), with its leaf.
// whole is a session's header and every entry, as an export writes them.
func whole(ctx context.Context, s *session.Session) (session.Header, []*session.Entry, error) {
	h, err := s.Header(ctx)
	if err != nil {
		return h, nil, err
	}
	entries, err := s.Store().Entries(ctx)
	return h, entries, err
}

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
