package transcript

import (
	"fmt"
	"sync/atomic"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// A whole file is decoded on every core a Runner gives (WithRunner): what
// each line says on its own is read for all lines at once; the entries are
// then made in order (each line's depend on the lines before: ids, parents,
// tool names); and the checks of the entries made — ValidateWrite, and
// keeping each line (keep.go) — are done for all of them at once again.
// Should any check fail, the file is decoded again one line after another,
// so that what a bad line does to the lines after it (they hang where it
// would have) is exactly what it always did.

// Option tunes one Decode.
type Option func(*options)

type options struct {
	run codec.Runner
	// viaJSON, set by tests only: see lines.viaJSON.
	viaJSON bool
}

// decoder is f's line decoder as the options make it.
func (o options) decoder(f Format) (*headed, error) {
	dec, err := NewLineDecoder(f)
	if err != nil {
		return nil, err
	}
	h := dec.(*headed)
	if l, ok := h.dec.(interface{ state() *lines }); ok {
		l.state().viaJSON = o.viaJSON
	}
	return h, nil
}

// WithRunner spreads the work of decoding a file through run (as
// codec.WithRunner does a pi file's); without it the lines are decoded one
// after another.
func WithRunner(run codec.Runner) Option {
	return func(o *options) { o.run = run }
}

// check is what is left to do to an entry: make it from v (when v is not
// nil: e holds only its id until then), validate it, then keep its line
// (when line is not nil).
type check struct {
	e      *session.Entry
	v      any
	line   []byte
	parsed bool // see lines.parsed
}

// validate validates e now, or leaves it for later.
func (l *lines) validate(e *session.Entry) error {
	if l.later != nil {
		*l.later = append(*l.later, check{e: e, parsed: l.parsed})
		return nil
	}
	return validateEntry(e, l.parsed)
}

// validateEntry is ValidateWrite, of an entry made from a line read
// strictly whole when parsed.
func validateEntry(e *session.Entry, parsed bool) error {
	check := session.ValidateWrite
	if parsed {
		check = session.ValidateWriteParsed
	}
	if err := check(e); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLine, err)
	}
	return nil
}

// keep keeps line in e (just validated) now, or later.
func (l *lines) keep(e *session.Entry, line []byte) error {
	if l.later != nil {
		if n := len(*l.later); n > 0 && (*l.later)[n-1].e == e {
			(*l.later)[n-1].line = line
			return nil
		}
	}
	return l.format.keep(e, line)
}

// do runs the check.
func (c check) do(f Format) error {
	if c.v != nil {
		e, err := piEntry(c.v)
		if err != nil {
			return err
		}
		if e.ID != c.e.ID {
			return fmt.Errorf("%w: entry %q was made as %q", ErrBadLine, c.e.ID, e.ID)
		}
		*c.e = *e
	}
	if err := validateEntry(c.e, c.parsed); err != nil {
		return err
	}
	if c.line != nil {
		return f.keep(c.e, c.line)
	}
	return nil
}

// parser is a line decoder whose lines can be read before they are
// decoded (claudeDecoder).
type parser interface {
	parse(raw []byte) any
	parsedLine(no int, raw []byte, parsed any) ([]*session.Entry, error)
	deferChecks(later *[]check)
}

func (l *lines) deferChecks(later *[]check) { l.later = later }

// decodeSpread is decode with the lines read and the entries checked
// through run; ok is false when a check failed (decode then decodes the
// file again, a line at a time).
func decodeSpread(f Format, src Source, items []fileItem, o options) (d *Decoded, bad []*codec.LineError, h *headed, ok bool) {
	run := o.run
	h, err := o.decoder(f)
	if err != nil {
		return nil, nil, nil, false
	}
	p, can := h.dec.(parser)
	if !can {
		return nil, nil, nil, false
	}
	parsed := make([]any, len(items))
	run(len(items), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if items[i].err == nil {
				parsed[i] = p.parse(items[i].line)
			}
		}
	})
	var later []check
	p.deferChecks(&later)
	d, bad = decodeItems(src, items, func(i int) ([]*session.Entry, error) {
		entries, err := p.parsedLine(items[i].no, items[i].line, parsed[i])
		if err == nil {
			h.dec.headerInfo(items[i].line, &h.info)
		}
		return entries, err
	})
	p.deferChecks(nil)
	var failed atomic.Bool
	run(len(later), func(lo, hi int) {
		for i := lo; i < hi && !failed.Load(); i++ {
			if later[i].do(f) != nil {
				failed.Store(true)
			}
		}
	})
	if failed.Load() {
		return nil, nil, nil, false
	}
	return d, bad, h, true
}
