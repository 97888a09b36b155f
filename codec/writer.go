package codec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// objWriter appends one JSON object member by member. Known fields are
// written when set, or when their type requires them and no Extra field
// stands in for them; Extra fields follow, minus keys already written.
type objWriter struct {
	b       []byte
	extra   []session.Field
	written keySet
	n       int
	err     error
	flushed bool
	// layout, when set, is the member order to write back (layout.go):
	// the object starts at start, and members locates what was written.
	layout  string
	start   int
	members []writtenMember
	// keepAbsent leaves out a required member the layout does not name.
	keepAbsent bool
}

func newObj(b []byte, extra []session.Field) objWriter {
	return objWriter{b: append(b, '{'), extra: extra, start: len(b)}
}

// newObjIn is newObj for an object read with layout l.
func newObjIn(b []byte, extra []session.Field, l session.Layout) objWriter {
	w := newObj(b, extra)
	w.layout = l.String()
	return w
}

func (w *objWriter) hasExtra(key string) bool {
	_, ok := w.extraOf(key)
	return ok
}

// extraOf is the Extra member named key.
func (w *objWriter) extraOf(key string) (session.Raw, bool) {
	for _, f := range w.extra {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// want decides whether a known field is written: a zero one that is
// required, unless Extra holds it or, in an object whose order has members
// it always writes (order.always: usage, cost), its layout says it had
// none.
func (w *objWriter) want(key string, set, required bool) bool {
	if set {
		return true
	}
	return required && !w.hasExtra(key) && (!w.keepAbsent || w.layout == "" || w.inLayout(key))
}

// inLayout reports whether the object's layout names key.
func (w *objWriter) inLayout(key string) bool {
	for rest := w.layout; rest != ""; {
		var k string
		k, rest, _ = strings.Cut(rest, layoutSep)
		if k == key {
			return true
		}
	}
	return false
}

func (w *objWriter) key(k string) {
	if w.layout != "" && len(w.members) > 0 {
		w.members[len(w.members)-1].end = len(w.b)
	}
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	if w.layout != "" {
		if w.members == nil {
			w.members = make([]writtenMember, 0, 16)
		}
		w.members = append(w.members, writtenMember{key: k, start: len(w.b)})
	}
	w.n++
	w.b = appendString(w.b, k)
	w.b = append(w.b, ':')
	if len(w.extra) > 0 {
		if w.written.has(k) {
			// Two members of one name: JSON.parse would keep the last,
			// strict readers refuse the object.
			w.fail(fmt.Errorf("%w: member %q written twice", ErrInvalid, k))
		}
		w.written.add(k)
	}
}

func (w *objWriter) str(k, v string, required bool) {
	if w.want(k, v != "", required) {
		w.key(k)
		w.b = appendString(w.b, v)
	}
}

func (w *objWriter) int(k string, v int64, required bool) {
	if w.want(k, v != 0, required) {
		w.key(k)
		w.b = strconv.AppendInt(w.b, v, 10)
	}
}

func (w *objWriter) float(k string, v float64, required bool) {
	if lit, kept := w.extraOf(k); kept && validNumberLiteral(lit) {
		// A literal kept beside the value (reader.float): written as read
		// while it still is the value (or the value is unset, as with a
		// number kept in Extra alone); a changed value is written as
		// itself, and the literal then not at all.
		w.key(k)
		if f, err := strconv.ParseFloat(string(lit), 64); err == nil && (f == v || v == 0) {
			w.b = append(w.b, lit...)
		} else {
			w.b, w.err = appendFloat(w.b, v, k, w.err)
		}
		return
	}
	if w.want(k, v != 0, required) {
		w.key(k)
		w.b, w.err = appendFloat(w.b, v, k, w.err)
	}
}

func (w *objWriter) bool(k string, v, required bool) {
	if w.want(k, v, required) {
		w.key(k)
		w.b = strconv.AppendBool(w.b, v)
	}
}

func (w *objWriter) null(k string) {
	w.key(k)
	w.b = append(w.b, "null"...)
}

// raw writes a verbatim JSON value after checking it is one. def is written
// for a required field that is absent.
func (w *objWriter) raw(k string, v session.Raw, required bool, def string) {
	if !w.want(k, v != nil, required) {
		return
	}
	w.key(k)
	if v == nil {
		w.b = append(w.b, def...)
		return
	}
	if !jsontext.Value(v).IsValid(decoderOpts...) {
		w.fail(fmt.Errorf("%w: field %q is not valid JSON", ErrInvalid, k))
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, v...)
}

func (w *objWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// flushExtra writes the Extra fields now rather than last, but for the
// keys of known fields that will still be written (no name is written
// twice).
func (w *objWriter) flushExtra(later ...string) {
	w.writeExtra(later...)
	w.flushed = true
}

func (w *objWriter) close() ([]byte, error) {
	if !w.flushed {
		w.writeExtra()
	}
	if w.layout != "" {
		w.reorder()
	}
	w.b = append(w.b, '}')
	return w.b, w.err
}

// writeExtra writes the Extra fields not written yet, but for the names
// in later.
func (w *objWriter) writeExtra(later ...string) {
	for _, f := range w.extra {
		if w.written.has(f.Key) || slices.Contains(later, f.Key) {
			continue
		}
		w.raw(f.Key, f.Value, true, "null")
	}
}

// appendFloat formats f as JavaScript's Number.prototype.toString does, so
// files we write read back in pi with the same numbers.
func appendFloat(b []byte, f float64, field string, prev error) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if prev == nil {
			prev = fmt.Errorf("%w: field %q is %v, which JSON cannot hold", ErrInvalid, field, f)
		}
		return append(b, '0'), prev
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	b = strconv.AppendFloat(b, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// strconv writes e-07 where JavaScript writes e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, prev
}

const hexDigits = "0123456789abcdef"

// plain8 reports whether the eight bytes of s need no escaping: none is a
// control character, '"', '\\' or outside ASCII (each of those takes
// appendString's slow path, which decides).
func plain8(s string) bool {
	return plainWord(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
}

// plainWord is plain8 of eight bytes loaded as one word.
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// A byte is zero in v when (v - ones) & ^v & highs marks it (bytes
	// below 0x80): below 0x20, '"' and '\\' are zero bytes of w - 0x20s,
	// w ^ '"'s and w ^ '\\'s.
	q, bs := w^('"'*ones), w^('\\'*ones)
	return (w|(w-0x20*ones)&^w|(q-ones)&^q|(bs-ones)&^bs)&highs == 0
}

// appendString quotes s exactly as JSON.stringify does: only '"', '\\' and
// control characters are escaped; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight plain ASCII bytes at a time: long texts are mostly that,
		// and a byte at a time was most of a snapshot's cost.
		if i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
