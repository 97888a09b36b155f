package main

import (
	"fmt"
	"io"
	"os"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/outline"
)

// visibleWriter is how verbs print to a terminal: what a session holds
// (escape codes, a carriage return, bidirectional overrides in a label, a
// name, a message, a file name) is written as a \u escape, so it shows
// instead of acting on the terminal. The escape is JSON's own, so JSON
// printed through it (context, watch, -json) keeps every value; invalid
// UTF-8 becomes U+FFFD. A rune split across writes is held for the next.
type visibleWriter struct {
	w    io.Writer
	tail []byte
	buf  []byte
}

func newVisibleWriter(w io.Writer) *visibleWriter { return &visibleWriter{w: w} }

func (v *visibleWriter) Write(p []byte) (int, error) {
	data := p
	if len(v.tail) > 0 {
		data = append(v.tail, p...)
		v.tail = nil
	}
	// Hold back an incomplete rune at the end.
	end := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				end = i
			}
			break
		}
	}
	v.tail = append(v.tail, data[end:]...)
	if err := v.emit(data[:end]); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (v *visibleWriter) emit(data []byte) error {
	v.buf = v.buf[:0]
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && size <= 1:
			v.buf = utf8.AppendRune(v.buf, utf8.RuneError)
		case outline.Hazard(r):
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				v.buf = fmt.Appendf(v.buf, `\u%04x\u%04x`, r1, r2)
			} else {
				v.buf = fmt.Appendf(v.buf, `\u%04x`, r)
			}
		default:
			v.buf = append(v.buf, data[:size]...)
		}
		data = data[size:]
	}
	_, err := v.w.Write(v.buf)
	return err
}

// Flush writes a rune left incomplete (as U+FFFD).
func (v *visibleWriter) Flush() error {
	if len(v.tail) == 0 {
		return nil
	}
	t := v.tail
	v.tail = nil
	return v.emit(t)
}

// terminal is the terminal w writes to (through a visibleWriter or not),
// or nil: what may draw on it itself (a progress bar, a pager) writes to
// it directly.
func terminal(w io.Writer) *os.File {
	if v, ok := w.(*visibleWriter); ok {
		w = v.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}
