//go:build !unix

package filestore

import "os"

// lockFile is a no-op where flock is unavailable; one writer per file is
// then the caller's responsibility.
func lockFile(f *os.File) error { return nil }
