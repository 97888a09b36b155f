package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Numbers keep the form they were written in. A JSON number is stored on
// the wire as a msgpack integer or float64 when that gives its literal
// back exactly as written (42, -7, 0.5, 1e-7: what JavaScript's
// Number.prototype.toString and our encoders write); any other literal
// (1.0, 15.0, 0.10, 1e3, -0, 1E3, an integer beyond 64 bits) is stored as
// its text in a msgpack extension of type numberExt, so an import, the
// stream, a snapshot, a backup and an export all give the same bytes.
// Readers of the version before refuse that extension (see
// docs/operations.md, Upgrades).

// numberExt is the msgpack extension type that holds a JSON number's
// literal text.
const numberExt int8 = 1

// numberKind says how a JSON number literal is stored.
type numberKind uint8

const (
	numInt     numberKind = iota // an int64 whose decimal form is the literal
	numUint                      // a uint64 above MaxInt64, likewise
	numFloat                     // a float64 that appendFloat writes back as the literal
	numLiteral                   // anything else: the literal itself
)

// classifyNumber tells how lit, a valid JSON number, is stored, with its
// value for the integer and float kinds. A literal beyond what a float64
// holds (1e400) is refused: JSON.parse makes it Infinity, which no
// reader of ours holds.
func classifyNumber(lit string) (numberKind, int64, uint64, float64, error) {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		if lit == "-0" {
			return numLiteral, 0, 0, 0, nil
		}
		return numInt, i, 0, 0, nil
	}
	if u, err := strconv.ParseUint(lit, 10, 64); err == nil {
		return numUint, 0, u, 0, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("%w: the number %s is beyond what a float64 holds", ErrInvalid, truncate([]byte(lit)))
	}
	if canonicalFloat(f, lit) {
		return numFloat, 0, 0, f, nil
	}
	return numLiteral, 0, 0, f, nil
}

// canonicalFloat reports whether appendFloat writes f as lit.
func canonicalFloat(f float64, lit string) bool {
	if plainDecimal(lit) {
		return true
	}
	var buf [32]byte
	b, err := appendFloat(buf[:0], f, "", nil)
	return err == nil && string(b) == lit
}

// appendNumberExt appends lit as a msgpack extension of type numberExt,
// with the header msgpack encoders write for its length.
func appendNumberExt(b []byte, lit string) []byte {
	n := len(lit)
	switch n {
	case 1:
		b = append(b, 0xd4)
	case 2:
		b = append(b, 0xd5)
	case 4:
		b = append(b, 0xd6)
	case 8:
		b = append(b, 0xd7)
	case 16:
		b = append(b, 0xd8)
	default:
		switch {
		case n <= math.MaxUint8:
			b = append(b, 0xc7, byte(n))
		case n <= math.MaxUint16:
			b = binary.BigEndian.AppendUint16(append(b, 0xc8), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xc9), uint32(n))
		}
	}
	b = append(b, byte(numberExt))
	return append(b, lit...)
}

// extHeader reads the type and length of the msgpack extension at the
// start of hdr, without consuming it; ok is false when hdr does not start
// with a whole extension header.
func extHeader(hdr []byte) (typ int8, n int, ok bool) {
	if len(hdr) < 2 {
		return 0, 0, false
	}
	switch c := hdr[0]; {
	case c >= 0xd4 && c <= 0xd8:
		return int8(hdr[1]), 1 << (c - 0xd4), true
	case c == 0xc7 && len(hdr) >= 3:
		return int8(hdr[2]), int(hdr[1]), true
	case c == 0xc8 && len(hdr) >= 4:
		return int8(hdr[3]), int(binary.BigEndian.Uint16(hdr[1:])), true
	case c == 0xc9 && len(hdr) >= 6:
		return int8(hdr[5]), int(binary.BigEndian.Uint32(hdr[1:])), true
	}
	return 0, 0, false
}

// validNumberLiteral reports whether lit is one JSON number.
func validNumberLiteral(lit []byte) bool {
	return len(lit) > 0 && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') &&
		jsontext.Value(lit).IsValid()
}

// plainDecimal reports whether lit is certainly how appendFloat writes
// its value, without formatting it: a non-zero decimal of at most 15
// significant digits (every such decimal is the shortest that reads back
// as its float64), from 1e-6 to below 1e15 (written without an
// exponent), with no leading zero and no trailing zero after the point.
// Most numbers in a session (costs, durations) are such; false means
// only that the check must format.
func plainDecimal(lit string) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	start := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	intDigits := i - start
	switch {
	case intDigits == 0, intDigits > 15, intDigits > 1 && lit[start] == '0':
		return false
	case i == len(lit):
		return lit[start] != '0' // an integer; zero is left to the check
	case lit[i] != '.':
		return false // an exponent
	}
	i++
	frac := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	if i != len(lit) || i == frac || lit[i-1] == '0' {
		return false
	}
	sig := intDigits + len(lit) - frac
	if lit[start] == '0' {
		zeros := 0
		for lit[frac+zeros] == '0' {
			zeros++
		}
		if zeros > 5 {
			return false // below 1e-6: written with an exponent
		}
		sig = len(lit) - frac - zeros
	}
	return sig <= 15
}
