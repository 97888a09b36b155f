package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/internal/parallel"
)

// runCheck loads a file leniently and lists every problem with its line;
// it fails when there is any problem but a torn last line.
func runCheck(ctx context.Context, e env) error {
	fs := newFlags("check", e)
	path, err := oneArg(fs, e.args, "session file")
	if err != nil {
		return err
	}
	data, err := filestore.ReadFile(path, 0)
	if err != nil {
		return err
	}
	ld, err := codec.DecodeFile(data, path, codec.Lenient, codec.WithRunner(parallel.Lines))
	if err != nil {
		return err
	}
	bad := 0
	for _, is := range ld.Issues {
		fmt.Fprintln(e.stdout, is.Error())
		if !errors.Is(is, codec.ErrTornWrite) {
			bad++
		}
	}
	h := ld.Tree.Header()
	fmt.Fprintf(e.stdout, "%s: session %s, version %d, %d entries loaded, leaf %q, %d problem(s)\n",
		path, h.ID, ld.Version, ld.Tree.Len(), ld.Tree.Leaf(), len(ld.Issues))
	if bad > 0 {
		return fmt.Errorf("%d bad line(s) in %s", bad, path)
	}
	return nil
}
