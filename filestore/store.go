package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
)

// SyncPolicy says when appends reach stable storage.
type SyncPolicy int

const (
	// SyncAlways fsyncs after every append: an acknowledged entry survives
	// a power loss.
	SyncAlways SyncPolicy = iota
	// SyncNone leaves flushing to the operating system: an acknowledged
	// entry survives a crash of the process, not of the machine.
	SyncNone
)

func (p SyncPolicy) String() string {
	if p == SyncNone {
		return "none"
	}
	return "always"
}

// Config configures a file store.
type Config struct {
	Sync SyncPolicy
	Mode codec.Mode
	// ReadOnly opens without locking; Append returns an error.
	ReadOnly bool
	// FileMode is the permission of created files.
	FileMode fs.FileMode
}

// DefaultConfig is strict loading, fsync on every append, files 0600.
func DefaultConfig() Config {
	return Config{Sync: SyncAlways, Mode: codec.Strict, FileMode: 0o600}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Sync != SyncAlways && c.Sync != SyncNone:
		return fmt.Errorf("%w: unknown sync policy %d", ErrInvalidConfig, c.Sync)
	case c.Mode != codec.Strict && c.Mode != codec.Lenient:
		return fmt.Errorf("%w: unknown mode %d", ErrInvalidConfig, c.Mode)
	case c.FileMode&0o600 != 0o600:
		return fmt.Errorf("%w: file mode %v does not let the owner read and write", ErrInvalidConfig, c.FileMode)
	}
	return nil
}

// Store is a session kept in one JSONL file.
type Store struct {
	*sessionkit.TreeStore
	path   string
	cfg    Config
	issues []*codec.LineError

	mu       sync.Mutex // guards f, size, poisoned (writeAhead runs as the TreeStore's only writer)
	f        *os.File
	size     int64
	poisoned bool
	buf      []byte
}

var (
	_ session.Store         = (*Store)(nil)
	_ session.BatchAppender = (*Store)(nil)
	_ session.TreeHolder    = (*Store)(nil)
)

// Create makes a new session file holding only the header, and opens it.
func Create(ctx context.Context, path string, h session.Header, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ReadOnly {
		return nil, fmt.Errorf("%w: cannot create a read-only store", ErrInvalidConfig)
	}
	if err := session.ValidateHeader(&h); err != nil {
		return nil, err
	}
	if h.Version == 0 {
		h.Version = session.CurrentVersion
	}
	line, err := codec.EncodeHeader(&h)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, cfg.FileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: %s", ErrExists, path)
	}
	if err != nil {
		return nil, fmt.Errorf("filestore: create: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s", err, path)
	}
	line = append(line, '\n')
	if _, err := f.Write(line); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("filestore: create %s: %w", path, err)
	}
	if err := syncFileAndDir(f, path); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	s := &Store{path: path, cfg: cfg, f: f, size: int64(len(line))}
	s.TreeStore = sessionkit.NewTreeStore(session.NewTree(h), s.writeAhead, s.close)
	return s, nil
}

// Open loads a session file. Unless cfg.ReadOnly, the file is locked
// against other writers, a torn last line is truncated away, and a
// version 1 or 2 file is rewritten as version 3 (atomically).
func Open(ctx context.Context, path string, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ReadOnly {
		data, err := ReadFile(path, 0)
		if err != nil {
			return nil, fmt.Errorf("filestore: open: %w", err)
		}
		ld, err := codec.DecodeFile(data, path, cfg.Mode, codec.WithRunner(parallel.Lines), codec.WithSharedData())
		if err != nil {
			return nil, err
		}
		s := &Store{path: path, cfg: cfg, issues: ld.Issues}
		s.TreeStore = sessionkit.NewTreeStore(ld.Tree, s.writeAhead, s.close)
		return s, nil
	}
	f, _, err := OpenRegular(path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("filestore: open: %w", err)
	}
	s, err := openLocked(f, path, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func openLocked(f *os.File, path string, cfg Config) (*Store, error) {
	if err := lockFile(f); err != nil {
		return nil, fmt.Errorf("%w: %s", err, path)
	}
	data, err := readAll(f, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("filestore: read %s: %w", path, err)
	}
	ld, err := codec.DecodeFile(data, path, cfg.Mode, codec.WithRunner(parallel.Lines), codec.WithSharedData())
	if err != nil {
		return nil, err
	}
	if ld.Version > session.CurrentVersion {
		return nil, fmt.Errorf("%w: %s is version %d; open it read-only", ErrUnsupportedVersion, path, ld.Version)
	}
	s := &Store{path: path, cfg: cfg, f: f, issues: ld.Issues, size: int64(len(data))}
	switch {
	case ld.Migrated:
		if len(ld.Issues) > 0 {
			return nil, fmt.Errorf("%w: %s has %d bad line(s); open it read-only or repair it", ErrNeedsRepair, path, len(ld.Issues))
		}
		nf, size, err := rewrite(path, ld.Tree, cfg)
		if err != nil {
			return nil, err
		}
		f.Close()
		s.f, s.size = nf, size
	case ld.Torn:
		// The torn line was never acknowledged: drop it so the next
		// append starts on a line of its own.
		if err := f.Truncate(ld.ValidEnd); err != nil {
			return nil, fmt.Errorf("filestore: truncate torn line of %s: %w", path, err)
		}
		s.size = ld.ValidEnd
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("filestore: sync %s: %w", path, err)
		}
	}
	if ld.MissingNewline && !ld.Migrated && !ld.Torn {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return nil, fmt.Errorf("filestore: terminate last line of %s: %w", path, err)
		}
		s.size++
	}
	s.TreeStore = sessionkit.NewTreeStore(ld.Tree, s.writeAhead, s.close)
	return s, nil
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Issues returns what the load skipped (Lenient) or repaired.
func (s *Store) Issues() []*codec.LineError { return append([]*codec.LineError(nil), s.issues...) }

// writeAhead appends the entries' lines in one write and syncs per policy.
// On any failure the file is cut back to its previous length.
func (s *Store) writeAhead(ctx context.Context, entries []*session.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.cfg.ReadOnly:
		return fmt.Errorf("filestore: %s is open read-only", s.path)
	case s.poisoned:
		return ErrPoisoned
	}
	buf := s.buf[:0]
	for _, e := range entries {
		var err error
		if buf, err = codec.AppendEntry(buf, e); err != nil {
			return err
		}
		buf = append(buf, '\n')
	}
	s.buf = buf
	n, err := s.f.Write(buf)
	if err == nil && s.cfg.Sync == SyncAlways {
		err = s.f.Sync()
	}
	if err != nil {
		// Cut back what may have been written; if even that fails the
		// file's tail is unknown and only a reopen (which re-reads and
		// repairs it) is safe.
		if terr := s.f.Truncate(s.size); terr != nil || s.f.Sync() != nil {
			s.poisoned = true
		}
		return fmt.Errorf("filestore: append to %s (%d of %d bytes written): %w", s.path, n, len(buf), err)
	}
	s.size += int64(n)
	if cap(s.buf) > 1<<20 {
		s.buf = nil // do not pin a large buffer after one big batch
	}
	return nil
}

func (s *Store) close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close() // closing releases the lock
	s.f = nil
	if err != nil {
		return fmt.Errorf("filestore: close %s: %w", s.path, err)
	}
	return nil
}

// rewrite writes the tree as a fresh file beside path and renames it over
// path, so a crash leaves either the old file or the new one.
func rewrite(path string, t *session.Tree, cfg Config) (*os.File, int64, error) {
	h := t.Header()
	entries, err := t.Entries()
	if err != nil {
		return nil, 0, err
	}
	data, err := codec.EncodeFile(&h, entries)
	if err != nil {
		return nil, 0, err
	}
	if err := WriteAtomic(path, data, cfg.FileMode); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("filestore: reopen %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, int64(len(data)), nil
}

// WriteAtomic replaces the file at path with data: written to a temporary
// file beside it, fsynced, renamed over it, and the directory fsynced, so
// that a crash leaves the old file or the new one, never a part.
func WriteAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	tmp := f.Name()
	fail := func(what string, err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("filestore: %s %s: %w", what, tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail("chmod", err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("sync", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("filestore: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("filestore: replace %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncFileAndDir(f *os.File, path string) error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("filestore: sync %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("filestore: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("filestore: sync dir %s: %w", dir, err)
	}
	return nil
}

// readAll reads f whole into one buffer of its size (not a growing one,
// which peaks at twice it), refusing a file over maxBytes; a file still
// growing is read as far as it was.
func readAll(f *os.File, maxBytes int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d a read allows", ErrTooLarge, st.Size(), maxBytes)
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}
