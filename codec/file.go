package codec

import "github.com/agentcore/sessionlog/session"

// MaxLineBytes bounds a line of a session file that is decoded: a longer
// one is reported (ErrLineTooLong) and skipped unread by the decoder,
// whose cost is several times a line's size. pi's lines with inline
// images stay far below it.
const MaxLineBytes = 64 << 20

// maxLineBytes is MaxLineBytes, smaller in tests.
var maxLineBytes = MaxLineBytes

// Mode says what DecodeFile does with bad lines.
type Mode int

const (
	// Strict refuses a file with any bad line (a torn last line excepted).
	Strict Mode = iota
	// Lenient keeps every good entry and reports what it skipped.
	Lenient
)

func (m Mode) String() string {
	if m == Lenient {
		return "lenient"
	}
	return "strict"
}

// File is a decoded session file.
type File struct {
	Tree *session.Tree
	// Issues lists the lines skipped (Lenient) and a torn last line.
	Issues []*LineError
	// Version is the format version the file had; Tree's header says 3
	// after migration.
	Version  int
	Migrated bool
	// ValidEnd is the offset just past the last complete line.
	ValidEnd int64
	// MissingNewline is set when the file ends in a complete line that
	// lacks its newline (the next append must add one first).
	MissingNewline bool
	// Torn is set when the file ends in an incomplete line.
	Torn bool
}

// Runner runs part over [0, n) cut into ranges, possibly at the same
// time, and returns when every range is done; the ranges cover each
// index once. codec starts no goroutines: a caller that wants a file's
// lines decoded on every core passes one that does.
type Runner func(n int, part func(lo, hi int))

// FileOption tunes one DecodeFile call.
type FileOption func(*fileOptions)

type fileOptions struct {
	run    Runner
	shared bool
}

// WithRunner decodes the lines through run; without it they are decoded
// one after another.
func WithRunner(run Runner) FileOption {
	return func(o *fileOptions) { o.run = run }
}

// WithSharedData lets the decoded entries' strings share the bytes of
// the data rather than copy them: for a caller that hands data over and
// never changes it afterwards (a file read for this call alone). It saves
// a copy of most of the text and an allocation per string; the data is
// kept in memory while any entry decoded from it is.
func WithSharedData() FileOption {
	return func(o *fileOptions) { o.shared = true }
}

// EncodeFile returns the whole session file for a header and entries, as
// pi writes it: the header line, then one line per entry.
func EncodeFile(h *session.Header, entries []*session.Entry) ([]byte, error) {
	buf, err := AppendHeader(nil, h)
	if err != nil {
		return nil, err
	}
	buf = append(buf, '\n')
	for _, e := range entries {
		if buf, err = AppendEntry(buf, e); err != nil {
			return nil, err
		}
		buf = append(buf, '\n')
	}
	return buf, nil
}
