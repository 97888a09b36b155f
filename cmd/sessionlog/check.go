package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/internal/parallel"
)

// runCheck loads a file leniently and lists every problem with its line;
// it fails when there is any problem but a torn last line.
func runCheck(ctx context.Context, e env) error {
	fs := newFlags("check", e)
	asJSON := fs.Bool("json", false, "print the result as JSON: the session, and each problem with its line")
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
	issues := byLine(ld.Issues)
	bad := 0
	for _, is := range issues {
		if !errors.Is(is, codec.ErrTornWrite) {
			bad++
		}
	}
	h := ld.Tree.Header()
	if *asJSON {
		type problem struct {
			Line  int    `json:"line"`
			ID    string `json:"id,omitempty"`
			Error string `json:"error"`
		}
		out := struct {
			File     string    `json:"file"`
			Session  string    `json:"session"`
			Version  int       `json:"version"`
			Entries  int       `json:"entries"`
			Leaf     string    `json:"leaf"`
			Problems []problem `json:"problems"`
		}{path, h.ID, ld.Version, ld.Tree.Len(), ld.Tree.Leaf(), []problem{}}
		for _, is := range issues {
			out.Problems = append(out.Problems, problem{is.Line, is.ID, is.Err.Error()})
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		for _, is := range issues {
			fmt.Fprintln(e.stdout, is.Error())
		}
		fmt.Fprintf(e.stdout, "%s: session %s, version %d, %d entries loaded, leaf %q, %d problem(s)\n",
			path, h.ID, ld.Version, ld.Tree.Len(), ld.Tree.Leaf(), len(issues))
	}
	if bad > 0 {
		return fmt.Errorf("%d bad line(s) in %s", bad, path)
	}
	return nil
}

// byLine is the problems in line order (the loader finds them in several
// passes).
func byLine(issues []*codec.LineError) []*codec.LineError {
	out := slices.Clone(issues)
	slices.SortStableFunc(out, func(a, b *codec.LineError) int { return cmp.Compare(a.Line, b.Line) })
	return out
}
