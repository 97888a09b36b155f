package filestore

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/agentcore/sessionlog/codec"
)

// MaxFileBytes bounds a session file read whole (check, import, display).
const MaxFileBytes = 4 << 30

// maxLineBytes bounds a line a listing reads (codec.MaxLineBytes, smaller
// in tests).
var maxLineBytes = codec.MaxLineBytes

var (
	// ErrNotRegular is returned for a path that is not a regular file
	// (a FIFO, a device such as /dev/zero, a directory, a socket), even
	// behind a symbolic link: reading one could block or never end.
	ErrNotRegular = errors.New("filestore: not a regular file")

	// ErrTooLarge is returned for a file over the size a read allows.
	ErrTooLarge = errors.New("filestore: file too large")
)

// OpenRegular opens path (flag as for os.OpenFile) only if it is a
// regular file. O_NONBLOCK keeps the open of a FIFO from waiting for a
// writer; on a regular file it changes nothing. Every reader of session
// files (this store, a follow) opens them so.
func OpenRegular(path string, flag int) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, KindOf(st.Mode()))
	}
	return f, st, nil
}

// KindOf names a file's type that is not a regular file's.
func KindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// ReadFile reads a session file whole: a regular file of at most
// maxBytes (0: MaxFileBytes).
func ReadFile(path string, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = MaxFileBytes
	}
	f, _, err := OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readAll(f, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}
