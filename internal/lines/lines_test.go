package lines

import (
	"errors"
	"strings"
	"testing"
)

// Lines come back numbered, blank ones counted but not given; one past
// the bound is passed over without being held (nil, its size), and the
// lines after it come back, a last one without its newline too.
func TestScan(t *testing.T) {
	var seen []int
	err := Scan(strings.NewReader("a\n\n"+strings.Repeat("z", 100<<10)+"\nb"), 1<<10, func(no int, line []byte, size int) error {
		if line == nil {
			seen = append(seen, -no)
		} else {
			seen = append(seen, no)
		}
		return nil
	})
	if err != nil || len(seen) != 3 || seen[0] != 1 || seen[1] != -3 || seen[2] != 4 {
		t.Fatalf("Scan saw %v (%v)", seen, err)
	}
	var got []string
	Scan(strings.NewReader("a\n"+strings.Repeat("x", 100)+"\nb\nlast"), 10, func(_ int, line []byte, _ int) error {
		if line == nil {
			got = append(got, "<too long>")
		} else {
			got = append(got, string(line))
		}
		return nil
	})
	if want := "a|<too long>|b|last"; strings.Join(got, "|") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, "|"), want)
	}
	stop := errors.New("stop")
	n := 0
	if err := Scan(strings.NewReader("a\nb\nc\n"), 10, func(int, []byte, int) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("fn's error: %v after %d lines", err, n)
	}
}
