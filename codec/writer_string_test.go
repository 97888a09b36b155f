package codec

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// refAppendString is appendString one byte at a time, as it was before
// its eight-byte fast path: the fast path must change nothing.
func refAppendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// TestAppendStringFastPath: strings mostly plain with every kind of byte
// that needs care sprinkled in, at every offset of the eight-byte words.
func TestAppendStringFastPath(t *testing.T) {
	special := []string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", " ", "~", "é", "€", "😀", "\xff", "\xe2\x82", "\u2028"}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 5000 {
		var s []byte
		for range r.IntN(40) {
			if r.IntN(4) == 0 {
				s = append(s, special[r.IntN(len(special))]...)
			} else {
				s = append(s, byte(0x20+r.IntN(0x5f)))
			}
		}
		got, want := string(appendString(nil, string(s))), string(refAppendString(nil, string(s)))
		if got != want {
			t.Fatalf("case %d %q: %s, want %s", n, s, got, want)
		}
	}
}

// FuzzAppendString holds the fast path to the byte loop on any input.
func FuzzAppendString(f *testing.F) {
	f.Add("plain text of some length, and more")
	f.Add("tab\there \"quoted\" back\\slash é€😀 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendString(nil, s), refAppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	})
}

// BenchmarkAppendString: a 900-byte English text, the byte loop (the
// baseline, in the same run) against appendString.
func BenchmarkAppendString(b *testing.B) {
	text := ""
	for len(text) < 900 {
		text += "The quick brown fox jumps over the lazy dog. "
	}
	for _, c := range []struct {
		name string
		fn   func([]byte, string) []byte
	}{{"byte-loop", refAppendString}, {"appendString", appendString}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			buf := make([]byte, 0, 2048)
			for b.Loop() {
				buf = c.fn(buf[:0], text)
			}
		})
	}
}
