package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// Repo is a directory of session files, <id>.jsonl each — the layout pi
// uses inside a project's session folder.
type Repo struct {
	dir string
	cfg Config
}

var _ session.Repo = (*Repo)(nil)

// NewRepo returns the repository in dir, creating the directory.
func NewRepo(dir string, cfg Config) (*Repo, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return &Repo{dir: dir, cfg: cfg}, nil
}

// Path returns the file of session id.
func (r *Repo) Path(id string) string { return filepath.Join(r.dir, id+".jsonl") }

// Create implements session.Repo.
func (r *Repo) Create(ctx context.Context, h session.Header) (session.Store, error) {
	if err := session.ValidateSessionID(h.ID); err != nil {
		return nil, err
	}
	s, err := Create(ctx, r.Path(h.ID), h, r.cfg)
	if errors.Is(err, ErrExists) {
		return nil, fmt.Errorf("%w: %q", session.ErrSessionExists, h.ID)
	}
	return s, err
}

// Open implements session.Repo. It takes a session id, or the path of a
// session file of this repository (what a fork's ParentSession holds).
func (r *Repo) Open(ctx context.Context, idOrPath string) (session.Store, error) {
	id, err := r.idOf(idOrPath)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, r.Path(id), r.cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q", session.ErrSessionNotFound, idOrPath)
	}
	return s, err
}

// idOf returns the session id of an id, or of the path of a session file
// in this repository's directory; any other path is refused.
func (r *Repo) idOf(idOrPath string) (string, error) {
	if strings.HasSuffix(idOrPath, ".jsonl") && strings.ContainsRune(idOrPath, filepath.Separator) {
		dir, file := filepath.Split(filepath.Clean(idOrPath))
		if filepath.Clean(dir) != filepath.Clean(r.dir) {
			return "", fmt.Errorf("%w: %q is not a session file of %s", session.ErrInvalidSessionID, idOrPath, r.dir)
		}
		idOrPath = strings.TrimSuffix(file, ".jsonl")
	}
	return idOrPath, session.ValidateSessionID(idOrPath)
}

// Delete implements session.Repo. It refuses a session another writer has
// open.
func (r *Repo) Delete(ctx context.Context, id string) error {
	if err := session.ValidateSessionID(id); err != nil {
		return err
	}
	p := r.Path(id)
	f, _, err := openRegular(p, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %q", session.ErrSessionNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("filestore: delete: %w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("filestore: delete %s: %w", id, err)
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("filestore: delete: %w", err)
	}
	return syncDir(r.dir)
}

// Fork implements session.Repo. The new header locates the source by its
// file path, as pi does (Open takes the path too). The source is read
// without its lock: another writer may hold it.
func (r *Repo) Fork(ctx context.Context, from string, p session.ForkPoint, h session.Header) (session.Store, session.ForkSelection, error) {
	id, err := r.idOf(from)
	if err != nil {
		return nil, session.ForkSelection{}, err
	}
	ro := r.cfg
	ro.ReadOnly = true
	src, err := Open(ctx, r.Path(id), ro)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, session.ForkSelection{}, fmt.Errorf("%w: %q", session.ErrSessionNotFound, from)
	}
	if err != nil {
		return nil, session.ForkSelection{}, err
	}
	defer src.Close(ctx)
	return session.Fork(ctx, src, p, h, r.Path(id), r.Create, func(_ context.Context, id string) error { return os.Remove(r.Path(id)) })
}

// List implements session.Repo. Each file is read once (its header, name
// lines and last line); files that are not sessions are skipped.
func (r *Repo) List(ctx context.Context, opts session.ListOptions) (session.ListPage, error) {
	if _, err := opts.PageLimit(); err != nil {
		return session.ListPage{}, err
	}
	names, err := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	if err != nil {
		return session.ListPage{}, err
	}
	var infos []session.SessionInfo
	for _, p := range names {
		if err := ctx.Err(); err != nil {
			return session.ListPage{}, err
		}
		in, ok := fileInfo(p)
		if ok {
			infos = append(infos, in)
		}
	}
	return session.Page(infos, opts)
}

// fileInfo reads what a listing shows of one file, a line at a time (a
// listing of large files holds one line at once, and a file that is not a
// regular one — a FIFO, /dev/zero behind a link — is skipped unread).
func fileInfo(p string) (session.SessionInfo, bool) {
	f, _, err := openRegular(p, os.O_RDONLY)
	if err != nil {
		return session.SessionInfo{}, false
	}
	defer f.Close()
	var h *session.Header
	var in session.SessionInfo
	var last []byte
	bad := false
	err = scanLines(f, maxLineBytes, func(no int, line []byte, size int) {
		switch {
		case bad:
		case h == nil:
			if h, err = codec.DecodeHeader(line); err != nil || line == nil {
				bad = true
			}
		default:
			in.Entries++
			last = append(last[:0], line...) // nil for a line too long to read
			if line == nil {
				last = nil
			}
			if bytes.Contains(line, []byte(`"session_info"`)) {
				if e, err := codec.DecodeEntry(line); err == nil && e.Type == session.TypeSessionInfo {
					in.Name = strings.TrimSpace(e.Name)
				}
			}
		}
	})
	if err != nil || bad || h == nil || strings.TrimSuffix(filepath.Base(p), ".jsonl") != h.ID {
		return session.SessionInfo{}, false
	}
	// Updated is the last entry's time (files keep no clock of their own).
	in.ID, in.Cwd, in.ParentSession, in.Created, in.Updated = h.ID, h.Cwd, h.ParentSession, h.Timestamp, h.Timestamp
	if last != nil {
		if e, err := codec.DecodeEntry(last); err == nil {
			in.Leaf = e.ID
			if e.Timestamp > in.Updated {
				in.Updated = e.Timestamp
			}
			if e.Type == session.TypeLeaf {
				in.Leaf = e.ParentID
			}
		}
	}
	return in, true
}
