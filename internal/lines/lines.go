// Package lines reads newline-delimited input a line at a time with a
// bound on a line's length: a longer line is read past, never held, and
// said to be too long, so what follows it is read as before. Session
// files (a listing, a follow's replay) and MCP's stdio read through it.
package lines

import (
	"bufio"
	"bytes"
	"io"
)

// Scan calls fn with each non-blank line of r that is at most max bytes
// (its number, counting every line; the line without its "\n"; its size),
// and with nil (and its size) for each longer one, whose bytes are skipped
// without being held: memory stays bounded by max whatever r holds. line
// is valid only during the call (a caller that keeps it copies it). An
// error from fn ends the scan and is returned.
func Scan(r io.Reader, max int, fn func(no int, line []byte, size int) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	no, size, over := 0, 0, false
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if !over {
			if size > max {
				over, long = true, nil
			} else if err == bufio.ErrBufferFull || long != nil {
				long = append(long, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if size > 0 {
			no++
			line := chunk
			if long != nil {
				line = long
			}
			var ferr error
			switch {
			case over:
				ferr = fn(no, nil, size)
			case len(bytes.TrimSpace(line)) > 0:
				ferr = fn(no, bytes.TrimRight(line, "\n"), size)
			}
			if ferr != nil {
				return ferr
			}
		}
		long, size, over = nil, 0, false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
