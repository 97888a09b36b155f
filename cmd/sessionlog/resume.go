package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// runResume puts a session back where its agent keeps its sessions on
// this machine — Claude Code's project folder, Codex's sessions folder,
// pi's sessions folder — as the file the agent wrote (byte for byte but
// for working directories mapped with -map), so that claude --resume,
// codex resume or pi's /resume find it. A file there that is not a
// beginning of this one (written on this machine since) is not
// overwritten unless -force.
func runResume(ctx context.Context, e env) error {
	fs := newFlags("resume", e)
	rf := addRepoFlags(fs)
	var maps pathMaps
	fs.Var(&maps, "map", "FROM=TO: a working directory under FROM on the machine it came from is under TO here (repeatable; /Users/a/src=/home/a/src)")
	home := fs.String("home", "", "the home directory the agents' folders are under (default: yours; $CLAUDE_CONFIG_DIR, $CODEX_HOME and $PI_CODING_AGENT_DIR are heeded)")
	force := fs.Bool("force", false, "overwrite a file there that has lines this session lacks")
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	if *home == "" {
		if *home, err = os.UserHomeDir(); err != nil {
			return err
		}
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		h, entries, err := whole(ctx, s)
		if err != nil {
			return err
		}
		var meta struct{ Source, File string }
		if len(h.Metadata) > 0 {
			_ = json.Unmarshal(h.Metadata, &meta)
		}
		var data []byte
		var dest, how string
		cwd := transcript.Map(maps, h.Cwd)
		switch transcript.Format(meta.Source) {
		case transcript.FormatClaudeCode, transcript.FormatCodex:
			f := transcript.Format(meta.Source)
			var skipped int
			if data, skipped, err = transcript.Export(f, entries); err != nil {
				return err
			}
			if skipped > 0 {
				fmt.Fprintf(e.stderr, "%d entries are not %s lines (appended since the import): not written\n", skipped, f)
			}
			if f == transcript.FormatClaudeCode {
				dir := envOr("CLAUDE_CONFIG_DIR", filepath.Join(*home, ".claude"))
				dest = filepath.Join(dir, "projects", transcript.ClaudeProjectDir(cwd), filepath.FromSlash(meta.File))
				how = fmt.Sprintf("cd %q && claude --resume %s", cwd, sessionOfFile(meta.File, h.ID))
			} else {
				rel, err := transcript.CodexSessionPath(meta.File)
				if err != nil {
					return err
				}
				dest = filepath.Join(envOr("CODEX_HOME", filepath.Join(*home, ".codex")), "sessions", filepath.FromSlash(rel))
				how = "codex resume " + h.ID
			}
		default:
			h.Cwd = cwd
			if data, err = codec.EncodeFile(&h, entries); err != nil {
				return err
			}
			dir := envOr("PI_CODING_AGENT_DIR", filepath.Join(*home, ".pi", "agent"))
			dest = filepath.Join(dir, "sessions", transcript.PiSessionDir(cwd), transcript.PiSessionFile(h.Timestamp, h.ID))
			how = fmt.Sprintf("cd %q && pi, then /resume", cwd)
			maps = nil // the header's cwd is mapped already
		}
		if data, err = transcript.MapCwd(data, maps); err != nil {
			return err
		}
		old, err := os.ReadFile(dest)
		switch {
		case errors.Is(err, iofs.ErrNotExist):
		case err != nil:
			return err
		case bytes.Equal(old, data):
			fmt.Fprintf(e.stdout, "%s (up to date)\n%s\n", dest, how)
			return nil
		case !bytes.HasPrefix(data, old) && !*force:
			return fmt.Errorf("%s holds lines this session lacks (written on this machine since?): not overwritten; -force to overwrite it", dest)
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
			return err
		}
		if err := filestore.WriteAtomic(dest, data, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n%s\n", dest, how)
		return nil
	})
}

// sessionOfFile is the id Claude Code resumes a file by: the file's name
// (a subagent's file is resumed through its main session's).
func sessionOfFile(file, id string) string {
	if dir := filepath.Dir(filepath.FromSlash(file)); dir != "." {
		return filepath.Base(filepath.Dir(dir)) // <main>/subagents/<agent>.jsonl
	}
	return id
}

// pathMaps is -map, repeatable.
type pathMaps []transcript.PathMap

func (p *pathMaps) String() string { return fmt.Sprint(*p) }

func (p *pathMaps) Set(s string) error {
	m, err := transcript.ParsePathMap(s)
	if err != nil {
		return err
	}
	*p = append(*p, m)
	return nil
}
