// Package lines reads newline-delimited input a line at a time with a
// bound on a line's length: a longer line is read past, never held, and
// said to be too long, so what follows it is read as before.
package lines

import (
	"bufio"
	"errors"
	"io"
)

// ErrTooLong is a line longer than the bound: its bytes were discarded.
var ErrTooLong = errors.New("lines: line too long")

// Read reads the next line into buf[:0] (its newline included) from r. A
// line longer than max bytes is discarded as it is read and ErrTooLong
// returned (with what there is of buf empty); io.EOF ends the input, with
// a last line without its newline returned first.
func Read(r *bufio.Reader, buf []byte, max int) ([]byte, error) {
	buf = buf[:0]
	long := false
	for {
		part, err := r.ReadSlice('\n')
		if !long {
			buf = append(buf, part...)
			if len(buf) > max {
				long, buf = true, buf[:0]
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case long && (err == nil || errors.Is(err, io.EOF)):
			return buf, ErrTooLong
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return buf, nil // the last line, without its newline
		default:
			return buf, err
		}
	}
}
