// Package jsonscan finds the ends of JSON strings fast, for the scanners
// that pass over strings without reading them (checking a value's shape,
// rewriting its long strings): a string is most of a JSON text's bytes,
// and a byte-at-a-time loop over it is most of such a scan's time.
package jsonscan

import "bytes"

// StringEnd is where the string whose first byte after the opening quote
// is at q closes: the index of its closing quote, or len(b) when it does
// not close. A backslash escapes the byte after it, as in a byte-at-a-time
// scan; b need not be valid JSON. It finds quotes with bytes.IndexByte and
// tells an escaped one by the backslashes just before it, so its cost is
// about that of IndexByte over the string.
func StringEnd(b []byte, q int) int {
	from := q
	for {
		k := bytes.IndexByte(b[from:], '"')
		if k < 0 {
			return len(b)
		}
		at := from + k
		n := 0
		for at-1-n >= q && b[at-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return at
		}
		from = at + 1
	}
}
