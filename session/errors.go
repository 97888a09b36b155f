package session

import (
	"errors"
	"fmt"
)

var (
	// ErrEntryNotFound is returned when an entry id names no entry of the
	// session.
	ErrEntryNotFound = errors.New("session: entry not found")

	// ErrSessionNotFound is returned by a Repo when a session id names no
	// session.
	ErrSessionNotFound = errors.New("session: session not found")

	// ErrSessionExists is returned by Repo.Create for an id already used.
	ErrSessionExists = errors.New("session: session already exists")

	// ErrDuplicateID is returned by Append when an entry with the same id
	// is already stored.
	ErrDuplicateID = errors.New("session: duplicate entry id")

	// ErrParentNotFound is returned by Append when the entry's parent is
	// not stored.
	ErrParentNotFound = errors.New("session: parent entry not found")

	// ErrCycle is reported by loaders when parent links loop.
	ErrCycle = errors.New("session: parent links form a cycle")

	// ErrInvalidEntry is returned by Append for an entry that is not well
	// formed (no id, no type, a message entry without a message, …). The
	// wrapping error names the field.
	ErrInvalidEntry = errors.New("session: invalid entry")

	// ErrInvalidTarget is returned by MoveTo, SetLabel, AppendCompaction and
	// fork selection when the entry they are pointed at cannot be used for
	// that purpose. See TargetError.
	ErrInvalidTarget = errors.New("session: invalid target")

	// ErrClosed is returned by a Store used after Close.
	ErrClosed = errors.New("session: store closed")

	// ErrConflict is returned by Append when another writer moved the
	// session on since the caller last looked. See ConflictError.
	ErrConflict = errors.New("session: concurrent write conflict")

	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("session: invalid config")
)

// TargetError says why an entry cannot be the target of an operation.
type TargetError struct {
	Op     string // "move", "label", "fork before", "compaction", …
	ID     string
	Reason string
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("session: %s: entry %q %s", e.Op, e.ID, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidTarget) hold, and ErrEntryNotFound when
// the target does not exist.
func (e *TargetError) Unwrap() []error {
	if e.Reason == reasonMissing {
		return []error{ErrInvalidTarget, ErrEntryNotFound}
	}
	return []error{ErrInvalidTarget}
}

const reasonMissing = "does not exist"

// ConflictError carries the state a losing writer must rebase onto.
type ConflictError struct {
	// Leaf is the session's leaf after the winning write.
	Leaf string
	// Sequence is the stream position the store saw, when it has one.
	Sequence uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("session: concurrent write conflict (leaf is now %q)", e.Leaf)
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// ErrInvalidSessionID is returned for a session id that cannot be a
// subject token and a file name: empty, too long, or holding anything but
// letters, digits, '-' and '_'.
var ErrInvalidSessionID = errors.New("session: invalid session id")

// MaxSessionIDLen bounds session ids.
const MaxSessionIDLen = 128

// ValidateSessionID refuses ids that could not be one NATS subject token
// and one file name: no '.', '*', '>', '/', whitespace or control
// characters.
func ValidateSessionID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidSessionID)
	case len(id) > MaxSessionIDLen:
		return fmt.Errorf("%w: %d bytes (max %d)", ErrInvalidSessionID, len(id), MaxSessionIDLen)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%w: %q (use letters, digits, '-' and '_')", ErrInvalidSessionID, id)
		}
	}
	return nil
}

// ErrNewerFormat is returned for something stored in a format newer than
// this sessionlog reads: written by a later release. It is refused, never
// rewritten into an older form. See FormatError.
var ErrNewerFormat = errors.New("session: stored in a newer format than this sessionlog reads")

// FormatError names a stored format met in a version this sessionlog does
// not read.
type FormatError struct {
	Format  string // "backup manifest", "snapshot", …
	What    string // where it was met: a path, an object's name
	Version int
	Newest  int // the newest version this sessionlog reads
}

func (e *FormatError) Error() string {
	if e.Version > e.Newest {
		return fmt.Sprintf("session: %s %s is of format %d, written by a newer sessionlog (this one reads up to %d): use that release or a later one", e.Format, e.What, e.Version, e.Newest)
	}
	return fmt.Sprintf("session: %s %s is of format %d, which this sessionlog does not read (it reads up to %d)", e.Format, e.What, e.Version, e.Newest)
}

// CheckFormat is nil when version is one this sessionlog reads, from
// oldest to newest; else a *FormatError naming the format and what was
// met in it (ErrNewerFormat when the version is newer).
func CheckFormat(format, what string, version, oldest, newest int) error {
	if version < oldest || version > newest {
		return &FormatError{Format: format, What: what, Version: version, Newest: newest}
	}
	return nil
}

// Unwrap makes errors.Is(err, ErrNewerFormat) hold for a newer version.
func (e *FormatError) Unwrap() error {
	if e.Version > e.Newest {
		return ErrNewerFormat
	}
	return nil
}
