package codec

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrMalformed is returned by the decoders when the input is not a
	// well-formed entry: bad JSON or msgpack, a missing or mistyped id,
	// type or parentId. The wrapping error says where and what.
	ErrMalformed = errors.New("codec: malformed input")

	// ErrInvalid is returned by the encoders when an entry cannot be
	// written faithfully: a Raw field that is not JSON, a NaN cost.
	ErrInvalid = errors.New("codec: invalid entry")

	// ErrMalformedLine is reported for a line of a session file that is
	// not a JSON entry; it wraps the decoder's reason.
	ErrMalformedLine = errors.New("codec: malformed line")

	// ErrTornWrite is reported for a final line cut short without its
	// newline: the trace of a crash in the middle of an append. It never
	// makes a decode fail; a writable open truncates it away.
	ErrTornWrite = errors.New("codec: incomplete last line (interrupted write)")

	// ErrBadHeader is returned when the first line of a file is not a
	// session header; nothing in such a file can be trusted to be a
	// session.
	ErrBadHeader = errors.New("codec: missing or malformed session header")

	// ErrLineTooLong is reported for a line over MaxLineBytes.
	ErrLineTooLong = errors.New("codec: line too long")
)

// MemberError is returned by DecodeEntryStrict for a member it refuses.
type MemberError struct {
	// Pointer locates the member (RFC 6901), e.g. "/message/role".
	Pointer string
	// Kind is the JSON kind of its value ("a string", "an object").
	Kind string
	// Reason, when set, says what is wrong instead of the default.
	Reason string
}

func (e *MemberError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("codec: %s: %s", e.Pointer, e.Reason)
	}
	return fmt.Sprintf("codec: %s: unknown member, or %s where another kind of value belongs", e.Pointer, e.Kind)
}

// Unwrap makes a MemberError an ErrMalformed.
func (e *MemberError) Unwrap() error { return ErrMalformed }

// LineError is one problem found in a session file, with where it is.
type LineError struct {
	File string
	Line int    // 1-based
	ID   string // the entry's id, when known
	Err  error
}

func (e *LineError) Error() string {
	id := ""
	if e.ID != "" {
		id = fmt.Sprintf(" (entry %s)", e.ID)
	}
	return fmt.Sprintf("%s:%d%s: %v", e.File, e.Line, id, e.Err)
}

// Unwrap returns the cause, so errors.Is(err, session.ErrCycle) etc. work.
func (e *LineError) Unwrap() error { return e.Err }

// FileError is returned by a strict DecodeFile that found problems; it
// lists every one.
type FileError struct {
	File   string
	Issues []*LineError
}

func (e *FileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "codec: %s: %d bad line(s)", e.File, len(e.Issues))
	for i, is := range e.Issues {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Issues)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(is.Error())
	}
	return b.String()
}

// Unwrap returns every issue, so errors.Is and errors.As see them all.
func (e *FileError) Unwrap() []error {
	out := make([]error, len(e.Issues))
	for i, is := range e.Issues {
		out[i] = is
	}
	return out
}
