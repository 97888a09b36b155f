//go:build !unix

package cluster

import (
	"os"
	"path/filepath"
)

// lockDataDir only creates the lock file where flock is unavailable.
func lockDataDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
}
