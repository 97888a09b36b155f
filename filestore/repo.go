package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/lines"
	"github.com/agentcore/sessionlog/session"
)

// Repo is a directory of session files: <id>.jsonl each, or pi's own
// layout — ~/.pi/agent/sessions, a folder per working directory
// (--home-me-project--) of <timestamp>_<id>.jsonl files — read as pi
// keeps it, so `sessionlog ls -files ~/.pi/agent/sessions` lists pi's
// sessions. In a directory laid out as pi's, new sessions are written as
// pi writes them, in their working directory's folder.
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

// Path returns the file of session id: where it is, in either layout, or
// where a new one goes in the flat layout.
func (r *Repo) Path(id string) string {
	if p := r.find(id); p != "" {
		return p
	}
	return filepath.Join(r.dir, id+".jsonl")
}

// find returns the file holding session id, in either layout, or "".
// (Ids are letters, digits, '-' and '_': nothing a pattern reads as
// special.)
func (r *Repo) find(id string) string {
	flat := filepath.Join(r.dir, id+".jsonl")
	if _, err := os.Lstat(flat); err == nil {
		return flat
	}
	for _, pattern := range []string{filepath.Join(r.dir, "*_"+id+".jsonl"), filepath.Join(r.dir, "*", "*_"+id+".jsonl")} {
		m, _ := filepath.Glob(pattern)
		for _, p := range m {
			if idOfFile(filepath.Base(p)) == id { // not a flat file "x_<id>.jsonl"
				return p
			}
		}
	}
	return ""
}

// piLayout reports whether the directory is laid out as pi's sessions
// folder (a --cwd-- folder in it).
func (r *Repo) piLayout() bool {
	m, _ := filepath.Glob(filepath.Join(r.dir, "--*--"))
	return len(m) > 0
}

// newPath is where a new session goes: pi's place for it in a pi layout.
func (r *Repo) newPath(h session.Header) string {
	if !r.piLayout() {
		return filepath.Join(r.dir, h.ID+".jsonl")
	}
	cwd := strings.TrimLeft(h.Cwd, "/\\")
	folder := "--" + strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(cwd) + "--"
	stamp := strings.NewReplacer(":", "-", ".", "-").Replace(h.Timestamp)
	return filepath.Join(r.dir, folder, stamp+"_"+h.ID+".jsonl")
}

// Create implements session.Repo.
func (r *Repo) Create(ctx context.Context, h session.Header) (session.Store, error) {
	if err := session.ValidateSessionID(h.ID); err != nil {
		return nil, err
	}
	if r.find(h.ID) != "" {
		return nil, fmt.Errorf("%w: %q", session.ErrSessionExists, h.ID)
	}
	p := r.newPath(h)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	s, err := Create(ctx, p, h, r.cfg)
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
		path := filepath.Clean(idOrPath)
		id := idOfFile(filepath.Base(path))
		// The path must be the very file of that id here (either layout).
		if session.ValidateSessionID(id) != nil || filepath.Clean(r.find(id)) != path {
			return "", fmt.Errorf("%w: %q is not a session file of %s", session.ErrInvalidSessionID, idOrPath, r.dir)
		}
		return id, nil
	}
	return idOrPath, session.ValidateSessionID(idOrPath)
}

// piFileName is pi's <timestamp>_<id>.jsonl: the timestamp is the
// header's with ':' and '.' made '-'.
var piFileName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_(.+)\.jsonl$`)

// idOfFile is the session id a file name says: <id>.jsonl, or pi's
// <timestamp>_<id>.jsonl.
func idOfFile(name string) string {
	if m := piFileName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return strings.TrimSuffix(name, ".jsonl")
}

// Delete implements session.Repo. It refuses a session another writer has
// open.
func (r *Repo) Delete(ctx context.Context, id string) error {
	if err := session.ValidateSessionID(id); err != nil {
		return err
	}
	p := r.find(id)
	if p == "" {
		return fmt.Errorf("%w: %q", session.ErrSessionNotFound, id)
	}
	f, _, err := OpenRegular(p, os.O_RDWR)
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
	return syncDir(filepath.Dir(p))
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
	// pi's layout: a folder per working directory.
	nested, err := filepath.Glob(filepath.Join(r.dir, "*", "*.jsonl"))
	if err != nil {
		return session.ListPage{}, err
	}
	names = append(names, nested...)
	var infos []session.Listing
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
func fileInfo(p string) (session.Listing, bool) {
	f, _, err := OpenRegular(p, os.O_RDONLY)
	if err != nil {
		return session.Listing{}, false
	}
	defer f.Close()
	var h *session.Header
	var in session.Listing
	var last []byte
	var labels session.ListedLabels
	labelOf := map[string]string{}
	bad := false
	err = lines.Scan(f, maxLineBytes, func(no int, line []byte, size int) error {
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
			switch {
			case bytes.Contains(line, []byte(`"session_info"`)):
				if e, err := codec.DecodeEntry(line); err == nil && e.NameChange() != nil {
					in.Name = strings.TrimSpace(e.NameChange().Name)
				}
			case bytes.Contains(line, []byte(`"label"`)):
				if e, err := codec.DecodeEntry(line); err == nil && e.Label() != nil {
					l := e.Label()
					labels.Change(labelOf[l.TargetID], l.Label)
					if l.Label == "" {
						delete(labelOf, l.TargetID)
					} else {
						labelOf[l.TargetID] = l.Label
					}
				}
			}
		}
		return nil
	})
	if err != nil || bad || h == nil || idOfFile(filepath.Base(p)) != h.ID {
		return session.Listing{}, false
	}
	// Updated is the last entry's time (files keep no clock of their own).
	in.ID, in.Cwd, in.ParentSession, in.Created, in.Updated = h.ID, h.Cwd, h.ParentSession, h.Timestamp, h.Timestamp
	in.Labels, in.Metadata = labels.List(), json.RawMessage(h.Metadata)
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
