package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
)

// Follower tails Config.Dirs into a repository. Its methods are called
// from one goroutine (Run's caller); it starts none.
type Follower struct {
	cfg   Config
	repo  session.Repo
	log   io.Writer
	files map[string]*file // by path
	// passed are the files the walks passed over (said once each).
	passed map[string]bool
	polls  int
	dirty  bool // state changed since it was saved
}

// New returns a follower of cfg.Dirs into repo, resuming from the state
// file when there is one.
func New(cfg Config, repo session.Repo) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Follower{cfg: cfg, repo: repo, log: cfg.Log, files: map[string]*file{}, passed: map[string]bool{}}
	if f.log == nil {
		f.log = io.Discard
	}
	if cfg.StatePath != "" {
		data, err := os.ReadFile(cfg.StatePath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("follow: state: %w", err)
		default:
			st, err := readState(cfg.StatePath, data)
			if err != nil {
				return nil, err
			}
			for p, s := range st {
				f.files[p] = &file{path: p, st: s}
			}
		}
	}
	return f, nil
}

// StateVersion is the newest format of the state file this follower
// reads. Version 1 is written as the bare map of files every release has
// written; {"version": N, "files": {…}} is read, for the release after
// this one to write (a release reads a format before one writes it, so
// that a node rolled back reads what its successor wrote).
const StateVersion = 1

// readState reads a state file of either form.
func readState(path string, data []byte) (map[string]fileState, error) {
	var versioned struct {
		Version *int                 `json:"version"`
		Files   map[string]fileState `json:"files"`
	}
	if json.Unmarshal(data, &versioned) == nil && versioned.Version != nil {
		if err := session.CheckFormat("follow state", path, *versioned.Version, 1, StateVersion); err != nil {
			return nil, fmt.Errorf("follow: %w", err)
		}
		return versioned.Files, nil
	}
	var st map[string]fileState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("follow: state %s: %w", path, err)
	}
	return st, nil
}

// Run polls until ctx ends, then closes the sessions it holds and saves
// its state. It returns nil when ctx ended it.
func (f *Follower) Run(ctx context.Context) error {
	defer f.Close(context.WithoutCancel(ctx))
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		if err := f.Poll(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll takes in what the files gained since the last poll (and looks for
// new files when a rescan is due). A file it cannot read or store is
// reported to the log and tried again next time; Poll fails only when the
// state cannot be saved.
func (f *Follower) Poll(ctx context.Context) error {
	if f.polls%f.cfg.RescanEvery == 0 {
		f.rescan()
	}
	f.polls++
	paths := make([]string, 0, len(f.files))
	for p := range f.files {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a main session before its subagents
	now := time.Now()
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		fl := f.files[p]
		changed, err := fl.poll(ctx, f.repo, f.log)
		if errors.Is(err, fs.ErrNotExist) {
			f.forget(ctx, p)
			continue
		}
		switch {
		case err == nil:
			fl.said = ""
		case err.Error() != fl.said:
			// Said once: a file no follow can read (its format unknown, not
			// a regular file) or a store that refuses is not repeated every
			// poll, only when the problem changes.
			fl.said = err.Error()
			fmt.Fprintf(f.log, "%s: %v (tried again when the file changes or the next poll; said once)\n", shown(p), err)
		}
		if changed {
			f.dirty = true
			fl.active = now
		}
		if fl.store != nil && now.Sub(fl.active) > f.cfg.IdleClose {
			fl.closeStore(ctx, f.log)
		}
	}
	return f.save()
}

// rescan walks the directories for files not followed yet (see Files:
// regular files only, and links only within the folder unless
// Config.FollowLinks). A file passed over is said once.
func (f *Follower) rescan() {
	for _, dir := range f.cfg.Dirs {
		found, err := Files(dir, f.cfg.FollowLinks, func(p string, err error) {
			if !f.passed[p] {
				f.passed[p] = true
				fmt.Fprintf(f.log, "%s: passed over: %v\n", shown(p), err)
			}
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue // not there yet: looked for again next rescan
		}
		if err != nil {
			fmt.Fprintf(f.log, "%s: %v\n", shown(dir), err)
		}
		for _, p := range found {
			if _, ok := f.files[p]; !ok {
				f.files[p] = &file{path: p}
			}
		}
	}
}

func (f *Follower) forget(ctx context.Context, p string) {
	fl := f.files[p]
	fl.closeStore(ctx, f.log)
	delete(f.files, p)
	f.dirty = true
	fmt.Fprintf(f.log, "%s: gone; its session %q stays\n", shown(p), fl.st.Session)
}

// save writes the state file, when there is one and it changed.
func (f *Follower) save() error {
	if f.cfg.StatePath == "" || !f.dirty {
		return nil
	}
	st := make(map[string]fileState, len(f.files))
	for p, fl := range f.files {
		if fl.st.Offset > 0 {
			st[p] = fl.st
		}
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.cfg.StatePath), 0o700); err != nil {
		return fmt.Errorf("follow: state: %w", err)
	}
	if err := filestore.WriteAtomic(f.cfg.StatePath, data, 0o600); err != nil {
		return fmt.Errorf("follow: state: %w", err)
	}
	f.dirty = false
	return nil
}

// Close closes the sessions the follower holds and saves its state. It is
// idempotent.
func (f *Follower) Close(ctx context.Context) error {
	for _, fl := range f.files {
		fl.closeStore(ctx, f.log)
	}
	return f.save()
}

// Files is what the follower knows of each file, by path.
func (f *Follower) Files() map[string]FileInfo {
	out := make(map[string]FileInfo, len(f.files))
	for p, fl := range f.files {
		out[p] = FileInfo{Session: fl.st.Session, Format: fl.st.Format, Lines: fl.st.Lines, Offset: fl.st.Offset}
	}
	return out
}

// FileInfo is a followed file: its session and how far it was read.
type FileInfo struct {
	Session, Format string
	Lines           int
	Offset          int64
}
