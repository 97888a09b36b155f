package session

import "testing"

// shapeOf passes over strings whatever they hold: brackets, digits and
// escaped quotes in a string are not the value's.
func TestShapeOf(t *testing.T) {
	for _, c := range []struct {
		raw   string
		depth int
		huge  string
	}{
		{`{"a":[1,2,{"b":null}]}`, 3, ""},
		{`"[[[[ 1e400 {{{{"`, 0, ""},
		{`["a\"[[[", ["\\", [1e400]]]`, 3, "1e400"},
		{`["\\\"]]]]", {"k\\\\":"[{"}]`, 2, ""},
		{`[1e308, -1e309]`, 1, "-1e309"},
		{`["unterminated [[[`, 1, ""},
		{`{"x":"\\"}[[`, 2, ""},
	} {
		depth, huge := shapeOf(Raw(c.raw))
		if depth != c.depth || huge != c.huge {
			t.Errorf("%s: depth %d, huge %q; want %d, %q", c.raw, depth, huge, c.depth, c.huge)
		}
	}
}
