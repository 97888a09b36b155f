package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentcore/sessionlog/follow"
	"github.com/agentcore/sessionlog/session"
)

// runFollow tails agents' session directories into the repository until
// interrupted: by default Claude Code's, Codex's and pi's under $HOME.
func runFollow(ctx context.Context, e env) error {
	fs := newFlags("follow", e)
	rf := addRepoFlags(fs)
	rf.create = true
	def := follow.DefaultConfig()
	interval := fs.Duration("interval", def.Interval, "how often files are checked for new lines")
	state := fs.String("state", "", "where the follow keeps how far it read each file (default: follow-state.json in -data; \"none\": nowhere)")
	once := fs.Bool("once", false, "take in what the files hold now, then stop")
	links := fs.Bool("follow-links", false, "take links to files outside the directories too (by default only links within them)")
	if err := parseFlags(fs, e.args); err != nil {
		return err
	}
	args := fs.Args() // directories; none: the agents' own
	cfg := def
	cfg.Interval, cfg.Log, cfg.FollowLinks = *interval, e.stderr, *links
	cfg.Dirs = args
	if len(cfg.Dirs) == 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		cfg.Dirs = []string{filepath.Join(home, ".claude", "projects"), filepath.Join(home, ".codex", "sessions"), filepath.Join(home, ".pi", "agent", "sessions")}
	}
	switch *state {
	case "none":
	case "":
		cfg.StatePath = filepath.Join(rf.data, "follow-state.json")
	default:
		cfg.StatePath = *state
	}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		f, err := follow.New(cfg, repo)
		if err != nil {
			return err
		}
		if *once {
			// Until a poll finds nothing more: a large file is taken in
			// over several.
			for {
				before := f.Files()
				if err := f.Poll(ctx); err != nil {
					f.Close(context.WithoutCancel(ctx))
					return err
				}
				if same(before, f.Files()) {
					return f.Close(context.WithoutCancel(ctx))
				}
			}
		}
		fmt.Fprintf(e.stderr, "following %v every %v (state %s)\n", cfg.Dirs, cfg.Interval, orNone(cfg.StatePath))
		start := time.Now()
		err = f.Run(ctx)
		fmt.Fprintf(e.stderr, "stopped after %v\n", time.Since(start).Round(time.Second))
		return err
	})
}

func same(a, b map[string]follow.FileInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
