package jsonscan

import "testing"

// slowEnd is the byte-at-a-time scan StringEnd must agree with.
func slowEnd(b []byte, q int) int {
	for q < len(b) {
		switch b[q] {
		case '\\':
			q += 2
			continue
		case '"':
			return q
		}
		q++
	}
	return len(b)
}

func TestStringEnd(t *testing.T) {
	for _, s := range []string{
		`"plain" x`, `"" x`, `"a\"b" x`, `"a\\" x`, `"a\\\"b" x`, `"\\\\\\\\" x`, `"unterminated`,
		`"ends in a backslash\`, `"\"`, `"x\\\\\"y\\"`, `"é \u00e9 \" \\" rest "second"`,
	} {
		if got, want := StringEnd([]byte(s), 1), slowEnd([]byte(s), 1); got != want {
			t.Errorf("%s: %d, want %d", s, got, want)
		}
	}
}

func FuzzStringEnd(f *testing.F) {
	f.Add([]byte(`"a\"b\\" c`), 1)
	f.Add([]byte(`\\\"`), 0)
	f.Fuzz(func(t *testing.T, b []byte, q int) {
		if q < 0 || q > len(b) {
			return
		}
		if got, want := StringEnd(b, q), slowEnd(b, q); got != want && !(got == len(b) && want > len(b)) {
			t.Fatalf("%q at %d: %d, want %d", b, q, got, want)
		}
	})
}
