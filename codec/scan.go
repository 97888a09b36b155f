package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// tokens is what the reader needs of a JSON tokenizer. jsontext's Decoder
// is one; scanner, over a line already in memory, is the one used: a
// session file is mostly a long run of lines to decode, and jsontext's
// Decoder (general: any io.Reader, buffered, every token tracked for
// names and pointers) spends most of that time. Both accept the same
// texts — JSON with duplicate names and invalid UTF-8 allowed, as
// JSON.parse does — which FuzzScannerMatchesJSONText holds them to.
type tokens interface {
	// PeekKind is the kind of the next token: '{' '}' '[' ']' '"' '0'
	// 'n' 't' 'f', or 0 when it is invalid (the next read says why).
	PeekKind() jsontext.Kind
	// ReadToken reads the next token.
	ReadToken() (jsontext.Token, error)
	// ReadValue reads the next value whole, or an object's member name,
	// as written; it is valid until the next call.
	ReadValue() (jsontext.Value, error)
	SkipValue() error
	// StackPointer is the JSON pointer to the last value read.
	StackPointer() jsontext.Pointer
}

var (
	_ tokens = (*jsontext.Decoder)(nil)
	_ tokens = (*scanner)(nil)
)

// scanner tokenizes one JSON text held in memory, checking it as it goes.
type scanner struct {
	buf   []byte
	pos   int     // offset of the next byte to look at
	stack []frame // the objects and arrays entered
	done  bool    // the top-level value has been read
	// peek caches PeekKind: at is the next token's offset (separator
	// consumed), -1 when not computed.
	peekAt  int
	peekErr error
	// plain is set when the last string scanned has no escapes and only
	// ASCII: its inside is its text, with nothing to decode or check.
	plain bool
}

type frame struct {
	array bool
	n     int  // values read in it
	named bool // an object's name was read and its value is next
	name  [2]int
}

func (s *scanner) Reset(b []byte) {
	s.buf, s.pos, s.stack, s.done, s.peekAt, s.peekErr = b, 0, s.stack[:0], false, -1, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipSpace(p int) int {
	for p < len(s.buf) && isSpace(s.buf[p]) {
		p++
	}
	return p
}

func (s *scanner) syntax(at int, format string, args ...any) error {
	return &jsontext.SyntacticError{ByteOffset: int64(at), Err: fmt.Errorf(format, args...)}
}

func (s *scanner) unexpected(p int, where string) error {
	if p >= len(s.buf) {
		return s.syntax(p, "unexpected EOF")
	}
	return s.syntax(p, "invalid character %s %s", quoteChar(s.buf[p]), where)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

// next finds the next token, past the separator the state calls for,
// without reading it.
func (s *scanner) next() (int, error) {
	if s.peekAt >= 0 || s.peekErr != nil {
		return s.peekAt, s.peekErr
	}
	p := s.skipSpace(s.pos)
	name := false // the token must be an object's member name
	if len(s.stack) == 0 {
		if s.done {
			if p < len(s.buf) {
				return s.remember(-1, s.unexpected(p, "after top-level value"))
			}
			return s.remember(-1, io.EOF)
		}
		if p >= len(s.buf) {
			return s.remember(-1, io.ErrUnexpectedEOF)
		}
	} else {
		f := &s.stack[len(s.stack)-1]
		if p >= len(s.buf) {
			return s.remember(-1, s.syntax(p, "unexpected EOF"))
		}
		c := s.buf[p]
		switch {
		case f.named:
			if c != ':' {
				return s.remember(-1, s.unexpected(p, "after object name (expecting ':')"))
			}
			p = s.skipSpace(p + 1)
		case !f.array && c == '}', f.array && c == ']':
			return s.remember(p, nil)
		case f.n > 0:
			if c != ',' {
				what := "after object value (expecting ',' or '}')"
				if f.array {
					what = "after array element (expecting ',' or ']')"
				}
				return s.remember(-1, s.unexpected(p, what))
			}
			p = s.skipSpace(p + 1)
			name = !f.array
		default:
			name = !f.array
		}
		if p >= len(s.buf) {
			return s.remember(-1, s.syntax(p, "unexpected EOF"))
		}
	}
	switch c := s.buf[p]; {
	case name && c != '"':
		return s.remember(-1, s.unexpected(p, "at start of string (expecting '\"')"))
	case c == '}' || c == ']':
		return s.remember(-1, s.unexpected(p, "at start of value"))
	}
	return s.remember(p, nil)
}

func (s *scanner) remember(p int, err error) (int, error) {
	s.peekAt, s.peekErr = p, err
	return p, err
}

func (s *scanner) PeekKind() jsontext.Kind {
	p, err := s.next()
	if err != nil {
		return 0
	}
	switch c := s.buf[p]; c {
	case '{', '}', '[', ']', '"', 'n', 't', 'f':
		return jsontext.Kind(c)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

// expectingName reports whether the next token is an object's member
// name.
func (s *scanner) expectingName() bool {
	if len(s.stack) == 0 {
		return false
	}
	f := &s.stack[len(s.stack)-1]
	return !f.array && !f.named
}

// take moves past a token read from p to end.
func (s *scanner) take(end int) { s.pos, s.peekAt, s.peekErr = end, -1, nil }

// counted notes that a value (not a name) was read in the current frame.
func (s *scanner) counted() {
	if len(s.stack) == 0 {
		s.done = true
		return
	}
	f := &s.stack[len(s.stack)-1]
	f.n++
	f.named = false
}

func (s *scanner) ReadToken() (jsontext.Token, error) {
	p, err := s.next()
	if err != nil {
		return jsontext.Token{}, err
	}
	switch c := s.buf[p]; c {
	case '{', '[':
		if len(s.stack) >= maxDepth {
			return jsontext.Token{}, s.syntax(p, "exceeded max depth")
		}
		s.stack = append(s.stack, frame{array: c == '['})
		s.take(p + 1)
		if c == '{' {
			return jsontext.BeginObject, nil
		}
		return jsontext.BeginArray, nil
	case '}', ']':
		s.stack = s.stack[:len(s.stack)-1]
		s.take(p + 1)
		s.counted()
		if c == '}' {
			return jsontext.EndObject, nil
		}
		return jsontext.EndArray, nil
	}
	v, err := s.ReadValue()
	if err != nil {
		return jsontext.Token{}, err
	}
	switch v[0] {
	case 'n':
		return jsontext.Null, nil
	case 't':
		return jsontext.True, nil
	case 'f':
		return jsontext.False, nil
	case '"':
		b, _ := jsontext.AppendUnquote(nil, v)
		return jsontext.String(string(b)), nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return jsontext.Token{}, s.syntax(p, "invalid number %s", v)
	}
	return jsontext.Float(f), nil
}

func (s *scanner) ReadValue() (jsontext.Value, error) {
	p, err := s.next()
	if err != nil {
		return nil, err
	}
	var end int
	switch c := s.buf[p]; c {
	case '"':
		if end, err = s.scanString(p); err != nil {
			return nil, err
		}
		if len(s.stack) > 0 {
			if f := &s.stack[len(s.stack)-1]; !f.array && !f.named {
				f.named, f.name = true, [2]int{p, end}
				s.take(end)
				return s.buf[p:end], nil
			}
		}
	case '{', '[':
		// The walk moves past it and counts it.
		if err := s.scanComposite(); err != nil {
			return nil, err
		}
		return s.buf[p:s.pos], nil
	default:
		if end, err = s.scanScalar(p); err != nil {
			return nil, err
		}
	}
	s.take(end)
	s.counted()
	return s.buf[p:end], nil
}

func (s *scanner) SkipValue() error {
	_, err := s.ReadValue()
	return err
}

// scanComposite reads the object or array next (PeekKind has found it)
// token by token, with the same checks.
func (s *scanner) scanComposite() error {
	base := len(s.stack)
	for {
		if _, err := s.ReadToken(); err != nil {
			s.stack = s.stack[:base]
			return err
		}
		if len(s.stack) == base {
			return nil
		}
	}
}

// scanScalar checks the literal or number at p and returns its end.
func (s *scanner) scanScalar(p int) (int, error) {
	b := s.buf
	for _, lit := range [...]string{"null", "true", "false"} {
		if b[p] == lit[0] {
			if len(b)-p >= len(lit) && string(b[p:p+len(lit)]) == lit {
				return p + len(lit), nil
			}
			return 0, s.syntax(p, "invalid literal")
		}
	}
	q := p
	if q < len(b) && b[q] == '-' {
		q++
	}
	switch {
	case q < len(b) && b[q] == '0':
		q++
	case q < len(b) && b[q] >= '1' && b[q] <= '9':
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
	default:
		return 0, s.unexpected(p, "at start of value")
	}
	if q < len(b) && b[q] == '.' {
		q++
		if q >= len(b) || b[q] < '0' || b[q] > '9' {
			return 0, s.unexpected(q, "in number (expecting digit)")
		}
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
	}
	if q < len(b) && (b[q] == 'e' || b[q] == 'E') {
		q++
		if q < len(b) && (b[q] == '+' || b[q] == '-') {
			q++
		}
		if q >= len(b) || b[q] < '0' || b[q] > '9' {
			return 0, s.unexpected(q, "in number (expecting digit)")
		}
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
	}
	return q, nil // what follows is checked as the next token
}

// stringStops marks the bytes a string scan stops at.
var stringStops = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// scanString checks the string literal at p and returns its end.
func (s *scanner) scanString(p int) (int, error) {
	b := s.buf
	q := p + 1
	var seen byte // every byte of the slow loop OR'd: 0x80 set once one is not ASCII
	escaped := false
	for {
		// Eight plain ASCII bytes at a time, as appendString writes
		// them: a long text is mostly that.
		for q+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[q:])) {
			q += 8
		}
		for q < len(b) && !stringStops[b[q]] {
			seen |= b[q]
			q++
		}
		if q >= len(b) {
			return 0, s.syntax(q, "unexpected EOF")
		}
		switch c := b[q]; {
		case c == '"':
			s.plain = !escaped && seen < 0x80
			return q + 1, nil
		case c < 0x20:
			return 0, s.syntax(q, "invalid character %s in string (expecting non-control character)", quoteChar(c))
		}
		// An escape.
		escaped = true
		if q+1 >= len(b) {
			return 0, s.syntax(q+1, "unexpected EOF")
		}
		switch b[q+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			q += 2
		case 'u':
			if len(b)-q < 6 {
				return 0, s.syntax(len(b), "unexpected EOF")
			}
			for _, h := range b[q+2 : q+6] {
				if !isHex(h) {
					return 0, s.syntax(q, "invalid escape sequence %q in string", b[q:q+6])
				}
			}
			q += 6
		default:
			return 0, s.syntax(q, "invalid escape sequence %q in string", b[q:q+2])
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// StackPointer spells out the pointer to the last value read: the
// members' names and the elements' indexes of the frames entered (in the
// innermost, the last element read; in the others, the one being read).
func (s *scanner) StackPointer() jsontext.Pointer {
	var out []byte
	for i, f := range s.stack {
		out = append(out, '/')
		if f.array {
			n := f.n
			if i == len(s.stack)-1 {
				n = max(n-1, 0)
			}
			out = strconv.AppendInt(out, int64(n), 10)
			continue
		}
		name, _ := jsontext.AppendUnquote(nil, s.buf[f.name[0]:f.name[1]])
		for _, c := range string(name) {
			switch c {
			case '~':
				out = append(out, "~0"...)
			case '/':
				out = append(out, "~1"...)
			default:
				out = append(out, string(c)...)
			}
		}
	}
	return jsontext.Pointer(out)
}
