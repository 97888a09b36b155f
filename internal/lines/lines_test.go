package lines

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// Lines come back whole with their newline; one past the bound is
// passed over without being held, and the lines after it come back.
func TestRead(t *testing.T) {
	in := "a\n" + strings.Repeat("x", 100) + "\nb\nlast"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	var got []string
	var buf []byte
	for {
		line, err := Read(r, buf, 10)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrTooLong) {
			got = append(got, "<too long>")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
		buf = line
	}
	if want := "a\n|<too long>|b\n|last"; strings.Join(got, "|") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, "|"), want)
	}
}
