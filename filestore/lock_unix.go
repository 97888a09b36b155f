//go:build unix

package filestore

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock, released when f is closed, so
// two writers never interleave appends to one file.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
