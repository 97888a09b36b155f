package filestore

import "errors"

var (
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
