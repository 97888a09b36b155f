package filestore

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrMalformedLine is reported for a line that is not a JSON entry.
	ErrMalformedLine = errors.New("filestore: malformed line")

	// ErrTornWrite is reported for a final line cut short without its
	// newline: the trace of a crash in the middle of an append. It never
	// makes a load fail; a writable open truncates it away.
	ErrTornWrite = errors.New("filestore: incomplete last line (interrupted write)")

	// ErrBadHeader is returned when the first line is not a session
	// header; nothing in such a file can be trusted to be a session.
	ErrBadHeader = errors.New("filestore: missing or malformed session header")

	// ErrUnsupportedVersion is returned when opening for writing a file of
	// a newer format version than this one writes.
	ErrUnsupportedVersion = errors.New("filestore: unsupported format version")

	// ErrLocked is returned by Open and Create when another store (in this
	// or another process) has the file open for writing.
	ErrLocked = errors.New("filestore: session file is locked by another writer")

	// ErrExists is returned by Create when the file already exists.
	ErrExists = errors.New("filestore: session file already exists")

	// ErrPoisoned is returned by Append after a write or fsync failed: what
	// reached the disk is unknown, so the store refuses further writes
	// until it is reopened (which re-reads the file).
	ErrPoisoned = errors.New("filestore: an earlier write failed; reopen the store")

	// ErrNeedsRepair is returned when a file that must be migrated to
	// version 3 also has bad lines: rewriting it would drop them.
	ErrNeedsRepair = errors.New("filestore: file needs migration but has bad lines")

	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("filestore: invalid config")
)

// LineError is one problem found while loading, with where it is.
type LineError struct {
	File string
	Line int    // 1-based
	ID   string // the entry's id, when known
	Err  error
}

func (e *LineError) Error() string {
	id := ""
	if e.ID != "" {
		id = fmt.Sprintf(" (entry %s)", e.ID)
	}
	return fmt.Sprintf("%s:%d%s: %v", e.File, e.Line, id, e.Err)
}

// Unwrap returns the cause, so errors.Is(err, session.ErrCycle) etc. work.
func (e *LineError) Unwrap() error { return e.Err }

// LoadError is returned by a strict load that found problems; it lists
// every one.
type LoadError struct {
	File   string
	Issues []*LineError
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "filestore: %s: %d bad line(s)", e.File, len(e.Issues))
	for i, is := range e.Issues {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Issues)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(is.Error())
	}
	return b.String()
}

// Unwrap returns every issue, so errors.Is and errors.As see them all.
func (e *LoadError) Unwrap() []error {
	out := make([]error, len(e.Issues))
	for i, is := range e.Issues {
		out[i] = is
	}
	return out
}
