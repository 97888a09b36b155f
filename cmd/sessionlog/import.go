package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/follow"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// runImport imports session files — pi's, Claude Code's transcripts (with
// their subagents) and Codex's rollouts, each recognised by its content —
// from files and directories searched for them (a whole
// ~/.pi/agent/sessions, ~/.claude/projects or ~/.codex/sessions tree),
// each a session; a summary says what was imported and what was skipped,
// and why.
func runImport(ctx context.Context, e env) error {
	fs := newFlags("import", e)
	rf := addRepoFlags(fs)
	rf.create = true
	id := fs.String("id", "", "session id to import as (default: the file's; one file only)")
	lenient := fs.Bool("lenient", false, "skip bad lines (listed on stderr) instead of refusing the file")
	format := fs.String("format", "auto", "the files' format: auto (recognised by their content), pi, claude-code or codex")
	links := fs.Bool("follow-links", false, "in directories, take links to files outside the directory too (by default only links within it)")
	args, err := parseArgs(fs, e.args, -1, "session files or directories (pi, Claude Code, Codex)")
	if err != nil {
		return err
	}
	files, missing, err := sessionFiles(args, *links, func(p string, err error) {
		fmt.Fprintf(e.stderr, "%s: passed over: %v\n", p, err)
	})
	if err != nil {
		return err
	}
	for _, m := range missing {
		fmt.Fprintf(e.stderr, "%s: no such file or directory, passed over\n", m)
	}
	if *id == "" {
		files = withSubagents(files)
	}
	if *id != "" && len(files) != 1 {
		return usageError("-id names one session: give one file")
	}
	var forced transcript.Format
	if *format != "auto" {
		if forced, err = transcript.ParseFormat(*format); err != nil {
			return usageError("%v", err)
		}
	}
	mode := codec.Strict
	if *lenient {
		mode = codec.Lenient
	}
	progress := progressOn(e.stderr, len(files))
	var imported, skipped, present int
	var reasons []string
	err = withRepo(ctx, rf, func(repo session.Repo) error {
		for i, f := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := importFile(ctx, repo, f, *id, forced, mode, e.stderr)
			progress(i + 1)
			if err != nil {
				if len(files) == 1 {
					return err
				}
				if errors.Is(err, session.ErrSessionExists) {
					present++ // imported before: a second run over the same folders is no failure
				}
				skipped++
				reasons = append(reasons, fmt.Sprintf("%s: %v", f, err))
				continue
			}
			imported++
			fmt.Fprintf(e.stdout, "%s\t%d entries\n", n.id, n.entries)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(files) > 1 {
		fmt.Fprintf(e.stderr, "imported %d of %d sessions", imported, len(files))
		if skipped > 0 {
			fmt.Fprintf(e.stderr, "; skipped %d:\n  %s", skipped, strings.Join(reasons, "\n  "))
		}
		fmt.Fprintln(e.stderr)
	}
	if imported == 0 && present < skipped {
		return fmt.Errorf("no session imported: every one of the %d files was refused", len(files))
	}
	return nil
}

type importedSession struct {
	id      string
	entries int
}

// importFile imports one file as a session (as id when set), in format f
// or, when f is empty, the one its content says.
func importFile(ctx context.Context, repo session.Repo, path, id string, f transcript.Format, mode codec.Mode, stderr io.Writer) (importedSession, error) {
	data, err := filestore.ReadFile(path, 0)
	if err != nil {
		return importedSession{}, err
	}
	data = transcript.TrimBOM(data) // as a follow reads it
	if f == "" {
		if f, err = transcript.Detect(data); err != nil {
			return importedSession{}, fmt.Errorf("%s: %w (pass -format)", path, err)
		}
	}
	var h session.Header
	var tree *session.Tree
	var issues []*codec.LineError
	if f == transcript.FormatPi {
		ld, err := codec.DecodeFile(data, path, mode, codec.WithRunner(parallel.Lines))
		if err != nil {
			return importedSession{}, err
		}
		h, tree, issues = ld.Tree.Header(), ld.Tree, ld.Issues
	} else {
		d, err := transcript.Decode(f, data, transcript.SourceFor(f, path), mode, transcript.WithRunner(parallel.Lines))
		if err != nil {
			return importedSession{}, err
		}
		h, issues = d.Header, d.Issues
		if tree, err = transcriptTree(d); err != nil {
			return importedSession{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, is := range issues {
		fmt.Fprintf(stderr, "skipped %v\n", is)
	}
	if id != "" {
		h.ID = id
	}
	if err := session.ValidateSessionID(h.ID); err != nil {
		return importedSession{}, fmt.Errorf("%w (pass -id to import under another id)", err)
	}
	if err := lifecycle.Import(ctx, repo, h, tree); err != nil {
		return importedSession{}, err
	}
	return importedSession{h.ID, tree.Len()}, nil
}

// transcriptTree is a decoded transcript's tree.
func transcriptTree(d *transcript.Decoded) (*session.Tree, error) {
	t := session.NewTree(d.Header)
	t.Grow(len(d.Entries))
	for _, e := range d.Entries {
		if err := t.Apply(e); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// sessionFiles expands the arguments: files as they are, directories to
// the .jsonl files under them, in name order. An argument that does not
// exist is passed over, named in missing (a user of one agent has no
// ~/.codex/sessions), unless none exists.
func sessionFiles(args []string, links bool, skipped func(string, error)) (files, missing []string, err error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, a)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		// A directory's files as a follow chooses them: regular files,
		// links only within it unless asked.
		found, err := follow.Files(a, links, skipped)
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	if len(missing) == len(args) {
		return nil, nil, fmt.Errorf("no such file or directory: %s", strings.Join(missing, ", "))
	}
	if len(out) == 0 {
		return nil, nil, errors.New("no .jsonl files in " + strings.Join(args, ", "))
	}
	return out, missing, nil
}

// withSubagents adds to files the subagents of the Claude Code sessions
// among them (<session>/subagents/*.jsonl beside <session>.jsonl) that a
// directory given whole did not bring already: a session comes with them.
func withSubagents(files []string) []string {
	seen := map[string]bool{}
	for _, f := range files {
		seen[f] = true
	}
	var out []string
	for _, f := range files {
		out = append(out, f)
		subs, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(f, ".jsonl"), "subagents", "*.jsonl"))
		sort.Strings(subs)
		for _, s := range subs {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// progressOn returns a function that shows "done/total" on w when w is a
// terminal and there is more than one file; elsewhere it does nothing.
func progressOn(w io.Writer, total int) func(done int) {
	f := terminal(w)
	if f == nil || total < 2 {
		return func(int) {}
	}
	return func(done int) {
		width := 30
		bar := strings.Repeat("#", done*width/total) + strings.Repeat(".", width-done*width/total)
		fmt.Fprintf(f, "\r[%s] %d/%d", bar, done, total)
		if done == total {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}
