package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The one-pass JSON → msgpack transcoder. Containers and strings are
// written after a 5-byte hole; once their length is known the hole gets
// the shortest header (as msgpack encoders write it) and the body moves
// up. The output is byte for byte what jsonToMsgpackTokens writes — the
// fuzz test FuzzMsgpackTranscoders holds the two to it — at a fraction of
// the cost; anything unusual (invalid UTF-8 in a string) goes to the
// token transcoder.

type fastTranscoder struct {
	d   tokens
	out []byte
}

// errSlowPath sends a value to the token transcoder.
type slowPath struct{}

func (slowPath) Error() string { return "codec: msgpack slow path" }

func jsonToMsgpackFast(data []byte) ([]byte, bool) {
	r := getReader(data)
	defer putReader(r)
	// The msgpack form is rarely longer than the JSON (a float can be):
	// written straight into a buffer of that size, it is not copied.
	t := fastTranscoder{d: r.d, out: make([]byte, 0, len(data)+len(data)/16+16)}
	if err := t.value(); err != nil {
		return nil, false
	}
	if err := r.end(); err != nil {
		return nil, false
	}
	return t.out, true
}

func (t *fastTranscoder) value() error {
	switch t.d.PeekKind() {
	case '{', '[':
		tok, err := t.d.ReadToken()
		if err != nil {
			return err
		}
		isMap := tok.Kind() == '{'
		end := jsontext.Kind('}')
		if !isMap {
			end = ']'
		}
		start := t.hole()
		n := 0
		for t.d.PeekKind() != end {
			if isMap {
				if err := t.str(); err != nil {
					return err
				}
			}
			if err := t.value(); err != nil {
				return err
			}
			n++
		}
		if _, err := t.d.ReadToken(); err != nil {
			return err
		}
		if isMap {
			t.fill(start, containerHeader(n, 0x80, 0xde, 0xdf))
		} else {
			t.fill(start, containerHeader(n, 0x90, 0xdc, 0xdd))
		}
		return nil
	case '"':
		return t.str()
	case '0':
		v, err := t.d.ReadValue()
		if err != nil {
			return err
		}
		return t.number(string(v))
	case 't', 'f', 'n':
		tok, err := t.d.ReadToken()
		if err != nil {
			return err
		}
		switch tok.Kind() {
		case 't':
			t.out = append(t.out, 0xc3)
		case 'f':
			t.out = append(t.out, 0xc2)
		default:
			t.out = append(t.out, 0xc0)
		}
		return nil
	}
	_, err := t.d.ReadToken() // an error: the reader says what is wrong
	if err == nil {
		err = slowPath{}
	}
	return err
}

func (t *fastTranscoder) str() error {
	v, err := t.d.ReadValue()
	if err != nil {
		return err
	}
	if body := v[1 : len(v)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		// Nothing to unquote: the header is known before the body.
		t.out = append(t.out, strHeader(len(body))...)
		t.out = append(t.out, body...)
		return nil
	}
	start := t.hole()
	if t.out, err = jsontext.AppendUnquote(t.out, v); err != nil {
		return slowPath{} // invalid UTF-8: keep the bytes as the token path does
	}
	t.fill(start, strHeader(len(t.out)-start-5))
	return nil
}

// hole reserves room for the longest header and returns where it starts.
func (t *fastTranscoder) hole() int {
	t.out = append(t.out, 0, 0, 0, 0, 0)
	return len(t.out) - 5
}

// fill writes hdr at start and moves the body after the 5-byte hole up.
func (t *fastTranscoder) fill(start int, hdr []byte) {
	copy(t.out[start:], hdr)
	body := t.out[start+5:]
	n := copy(t.out[start+len(hdr):], body)
	t.out = t.out[:start+len(hdr)+n]
}

func containerHeader(n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return []byte{fix | byte(n)}
	case n <= math.MaxUint16:
		return []byte{b16, byte(n >> 8), byte(n)}
	}
	return binary.BigEndian.AppendUint32([]byte{b32}, uint32(n))
}

func strHeader(n int) []byte {
	switch {
	case n < 32:
		return []byte{0xa0 | byte(n)}
	case n <= math.MaxUint8:
		return []byte{0xd9, byte(n)}
	case n <= math.MaxUint16:
		return []byte{0xda, byte(n >> 8), byte(n)}
	}
	return binary.BigEndian.AppendUint32([]byte{0xdb}, uint32(n))
}

// number writes a JSON number as encodeNumber does: the smallest integer
// form when it is an integer, a float64 when that gives the literal back,
// else the literal (number.go).
func (t *fastTranscoder) number(lit string) error {
	kind, i, u, f, err := classifyNumber(lit)
	if err != nil {
		return err
	}
	switch kind {
	case numUint:
		t.uint(u)
	case numFloat:
		t.out = binary.BigEndian.AppendUint64(append(t.out, 0xcb), math.Float64bits(f))
	case numLiteral:
		t.out = appendNumberExt(t.out, lit)
	case numInt:
		if i >= 0 {
			t.uint(uint64(i))
			return nil
		}
		switch {
		case i >= -32:
			t.out = append(t.out, byte(i))
		case i >= math.MinInt8:
			t.out = append(t.out, 0xd0, byte(i))
		case i >= math.MinInt16:
			t.out = binary.BigEndian.AppendUint16(append(t.out, 0xd1), uint16(i))
		case i >= math.MinInt32:
			t.out = binary.BigEndian.AppendUint32(append(t.out, 0xd2), uint32(i))
		default:
			t.out = binary.BigEndian.AppendUint64(append(t.out, 0xd3), uint64(i))
		}
	}
	return nil
}

func (t *fastTranscoder) uint(n uint64) {
	switch {
	case n <= math.MaxInt8:
		t.out = append(t.out, byte(n))
	case n <= math.MaxUint8:
		t.out = append(t.out, 0xcc, byte(n))
	case n <= math.MaxUint16:
		t.out = binary.BigEndian.AppendUint16(append(t.out, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		t.out = binary.BigEndian.AppendUint32(append(t.out, 0xce), uint32(n))
	default:
		t.out = binary.BigEndian.AppendUint64(append(t.out, 0xcf), n)
	}
}
