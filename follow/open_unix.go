//go:build unix

package follow

import (
	"os"
	"syscall"
)

// openNonblock opens p read-only with O_NONBLOCK: opening a FIFO returns
// at once instead of waiting for a writer. (Regular files ignore it.)
func openNonblock(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
