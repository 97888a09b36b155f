package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/agentcore/sessionlog/session"
)

// The wire form of an entry is the msgpack image of its JSON form: the same
// camelCase keys, integers as msgpack integers, other numbers as float64.
// Deriving one from the other keeps a single schema for both codecs.

// EncodeEntryMsgpack encodes e for the wire.
func EncodeEntryMsgpack(e *session.Entry) ([]byte, error) {
	// The JSON form is a step on the way, written into a scratch buffer
	// kept for the next entry: only the wire form is allocated (the step
	// was 40% of an append's bytes allocated).
	bp := jsonScratch.Get().(*[]byte)
	j, err := AppendEntry((*bp)[:0], e)
	var out []byte
	if err == nil {
		out, err = jsonToMsgpack(j) // writes a buffer of its own: nothing of j is kept
	}
	if cap(j) <= maxScratch {
		*bp = j[:0]
		jsonScratch.Put(bp)
	}
	return out, err
}

// jsonScratch holds buffers for the JSON step of EncodeEntryMsgpack; one
// grown past maxScratch (an entry with a large member) is not kept.
var jsonScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxScratch = 256 << 10

// DecodeEntryMsgpack decodes an entry encoded by EncodeEntryMsgpack (or by
// any msgpack writer using the same keys).
func DecodeEntryMsgpack(b []byte) (*session.Entry, error) {
	j, err := msgpackToJSON(b)
	if err != nil {
		return nil, err
	}
	return DecodeEntry(j)
}

// EncodeHeaderMsgpack encodes a session header for the wire.
func EncodeHeaderMsgpack(h *session.Header) ([]byte, error) {
	j, err := EncodeHeader(h)
	if err != nil {
		return nil, err
	}
	return jsonToMsgpack(j)
}

// DecodeMsgpack decodes a header or an entry, whichever its type says it
// is: where both share a subject, the message itself tells them apart.
func DecodeMsgpack(b []byte) (*session.Header, *session.Entry, error) {
	j, err := msgpackToJSON(b)
	if err != nil {
		return nil, nil, err
	}
	if typeOf(j) == string(session.TypeSession) {
		h, err := DecodeHeader(j)
		return h, nil, err
	}
	e, err := DecodeEntry(j)
	return nil, e, err
}

// MsgpackType is the "type" member of a msgpack-encoded header or entry,
// read without decoding the rest: what a consumer that keeps only some
// types needs to skip the others cheaply.
func MsgpackType(b []byte) (string, error) {
	d := msgpack.NewDecoder(bytes.NewReader(b))
	n, err := d.DecodeMapLen()
	if err != nil {
		return "", err
	}
	for range n {
		k, err := d.DecodeString()
		if err != nil {
			return "", err
		}
		if k == "type" {
			return d.DecodeString()
		}
		if err := d.Skip(); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("codec: no type member")
}

// typeOf is the "type" member of a JSON object ("" if it has none, or is
// not an object: the decoders then say what is wrong).
func typeOf(j []byte) string {
	d := jsontext.NewDecoder(bytes.NewReader(j))
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return ""
	}
	for d.PeekKind() == '"' {
		k, err := d.ReadToken()
		if err != nil {
			return ""
		}
		if k.String() == "type" {
			v, err := d.ReadToken()
			if err != nil || v.Kind() != '"' {
				return ""
			}
			return v.String()
		}
		if d.SkipValue() != nil {
			return ""
		}
	}
	return ""
}

// DecodeHeaderMsgpack decodes a header encoded by EncodeHeaderMsgpack.
func DecodeHeaderMsgpack(b []byte) (*session.Header, error) {
	j, err := msgpackToJSON(b)
	if err != nil {
		return nil, err
	}
	return DecodeHeader(j)
}

// mpTok is one flattened JSON token; n counts members of a container.
type mpTok struct {
	kind jsontext.Kind
	s    string
	n    int
}

// jsonToMsgpack transcodes one JSON value to msgpack.
func jsonToMsgpack(data []byte) ([]byte, error) {
	if out, ok := jsonToMsgpackFast(data); ok {
		return out, nil
	}
	return jsonToMsgpackTokens(data)
}

// jsonToMsgpackTokens is the general transcoder: it flattens the value's
// tokens, then writes them with the msgpack encoder.
func jsonToMsgpackTokens(data []byte) ([]byte, error) {
	r := getReader(data)
	defer putReader(r)
	// First pass: flatten, counting container members so the msgpack
	// headers can carry their lengths.
	type frame struct{ tok, seen int }
	var toks []mpTok
	var stack []frame
	for {
		// Strings and numbers are read as values: their literal text is
		// what is kept.
		k := r.d.PeekKind()
		var lit []byte
		var err error
		if k == '"' || k == '0' {
			lit, err = r.d.ReadValue()
		} else {
			var tok jsontext.Token
			tok, err = r.d.ReadToken()
			k = tok.Kind()
		}
		if err != nil {
			return nil, malformed(err)
		}
		if len(stack) > 0 && k != '}' && k != ']' {
			top := &stack[len(stack)-1]
			// Count array elements, and object members on their names.
			if toks[top.tok].kind == '[' || top.seen%2 == 0 {
				toks[top.tok].n++
			}
			top.seen++
		}
		switch k {
		case '{', '[':
			toks = append(toks, mpTok{kind: k})
			stack = append(stack, frame{tok: len(toks) - 1})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case '"':
			toks = append(toks, mpTok{kind: k, s: string(r.unquoted(lit))})
		case '0':
			toks = append(toks, mpTok{kind: k, s: string(lit)})
		default:
			toks = append(toks, mpTok{kind: k})
		}
		if len(stack) == 0 {
			break
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	for _, t := range toks {
		var err error
		switch t.kind {
		case '{':
			err = enc.EncodeMapLen(t.n)
		case '[':
			err = enc.EncodeArrayLen(t.n)
		case '"':
			err = enc.EncodeString(t.s)
		case '0':
			err = encodeNumber(enc, t.s)
		case 't':
			err = enc.EncodeBool(true)
		case 'f':
			err = enc.EncodeBool(false)
		case 'n':
			err = enc.EncodeNil()
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return buf.Bytes(), nil
}

func encodeNumber(enc *msgpack.Encoder, lit string) error {
	kind, i, u, f, err := classifyNumber(lit)
	if err != nil {
		return err
	}
	switch kind {
	case numInt:
		return enc.EncodeInt(i)
	case numUint:
		return enc.EncodeUint(u)
	case numFloat:
		return enc.EncodeFloat64(f)
	}
	if err := enc.EncodeExtHeader(numberExt, len(lit)); err != nil {
		return err
	}
	_, err = enc.Writer().Write([]byte(lit))
	return err
}

// msgpackToJSON transcodes one msgpack value to JSON. Binary values become
// base64 strings, timestamps ISO-8601 strings and number literals
// (number.go) themselves; other extension types are refused.
func msgpackToJSON(data []byte) ([]byte, error) {
	rd := bytes.NewReader(data)
	dec := msgpack.NewDecoder(rd)
	m := &mpReader{dec: dec, rd: rd, data: data}
	out, err := m.value(nil, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: msgpack: %w", ErrMalformed, err)
	}
	if _, err := dec.PeekCode(); err == nil {
		return nil, fmt.Errorf("%w: msgpack: bytes after the value", ErrMalformed)
	}
	return out, nil
}

// maxDepth bounds the nesting of values, JSON (as jsontext does) and
// msgpack alike.
const maxDepth = 10000

// mpReader walks msgpack input held in memory, so that every declared
// length can be checked against the bytes that remain before anything is
// allocated for it.
type mpReader struct {
	dec  *msgpack.Decoder
	rd   *bytes.Reader
	data []byte
}

// checkLen refuses a str, bin, ext, array or map header that declares more
// items or bytes than the input has left.
func (m *mpReader) checkLen(c byte) error {
	pos := len(m.data) - m.rd.Len()
	hdr := m.data[pos:]
	var n, size int
	switch {
	case c == msgpcode.Str8 || c == msgpcode.Bin8:
		size = 1
	case c == msgpcode.Str16 || c == msgpcode.Bin16 || c == msgpcode.Array16 || c == msgpcode.Map16:
		size = 2
	case c == msgpcode.Str32 || c == msgpcode.Bin32 || c == msgpcode.Array32 || c == msgpcode.Map32:
		size = 4
	default:
		return nil
	}
	if len(hdr) < 1+size {
		return fmt.Errorf("truncated header")
	}
	for _, x := range hdr[1 : 1+size] {
		n = n<<8 | int(x)
	}
	if left := len(hdr) - 1 - size; n > left {
		return fmt.Errorf("declared length %d exceeds the %d bytes left", n, left)
	}
	return nil
}

func (m *mpReader) value(b []byte, depth int) ([]byte, error) {
	dec := m.dec
	if depth > maxDepth {
		return b, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	c, err := dec.PeekCode()
	if err != nil {
		return b, err
	}
	if err := m.checkLen(c); err != nil {
		return b, err
	}
	switch {
	case c == msgpcode.Nil:
		return append(b, "null"...), dec.DecodeNil()
	case c == msgpcode.True || c == msgpcode.False:
		v, err := dec.DecodeBool()
		return strconv.AppendBool(b, v), err
	case msgpcode.IsFixedNum(c) || c == msgpcode.Int8 || c == msgpcode.Int16 || c == msgpcode.Int32 || c == msgpcode.Int64:
		v, err := dec.DecodeInt64()
		return strconv.AppendInt(b, v, 10), err
	case c == msgpcode.Uint8 || c == msgpcode.Uint16 || c == msgpcode.Uint32 || c == msgpcode.Uint64:
		v, err := dec.DecodeUint64()
		return strconv.AppendUint(b, v, 10), err
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := dec.DecodeFloat64()
		if err != nil {
			return b, err
		}
		return appendFloat(b, v, "number", nil)
	case msgpcode.IsString(c):
		s, err := dec.DecodeString()
		return appendString(b, s), err
	case msgpcode.IsBin(c):
		v, err := dec.DecodeBytes()
		return appendString(b, base64.StdEncoding.EncodeToString(v)), err
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return b, err
		}
		b = append(b, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = m.value(b, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := dec.DecodeMapLen()
		if err != nil {
			return b, err
		}
		b = append(b, '{')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			kc, err := dec.PeekCode()
			if err != nil {
				return b, err
			}
			if !msgpcode.IsString(kc) {
				return b, fmt.Errorf("map key of type 0x%02x is not a string", kc)
			}
			k, err := dec.DecodeString()
			if err != nil {
				return b, err
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, err = m.value(b, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case msgpcode.IsExt(c):
		if typ, n, ok := extHeader(m.data[len(m.data)-m.rd.Len():]); ok && typ == numberExt {
			return m.numberLiteral(b, n)
		}
		t, err := dec.DecodeTime()
		if err != nil {
			return b, fmt.Errorf("extension type is not a timestamp: %w", err)
		}
		return appendString(b, t.UTC().Format(time.RFC3339Nano)), nil
	}
	return b, fmt.Errorf("unknown msgpack code 0x%02x", c)
}

// numberLiteral appends the JSON number held by the extension of n bytes
// at the reader's position.
func (m *mpReader) numberLiteral(b []byte, n int) ([]byte, error) {
	if _, _, err := m.dec.DecodeExtHeader(); err != nil {
		return b, err
	}
	if n > m.rd.Len() {
		return b, fmt.Errorf("declared length %d exceeds the %d bytes left", n, m.rd.Len())
	}
	pos := len(m.data) - m.rd.Len()
	lit := m.data[pos : pos+n]
	if !validNumberLiteral(lit) {
		return b, fmt.Errorf("number extension holds %q, not a JSON number", truncate(lit))
	}
	if _, err := m.rd.Seek(int64(n), io.SeekCurrent); err != nil {
		return b, err
	}
	return append(b, lit...), nil
}
