package session_test

import (
	"errors"
	"testing"

	"github.com/agentcore/sessionlog/session"
)

func TestIDList(t *testing.T) {
	ids := []string{"a1", "", "bcd", "e"}
	l := session.IDListOf(ids)
	if l.Len() != 4 || l.All() != "a1bcde" {
		t.Fatalf("packed %d ids as %q", l.Len(), l.All())
	}
	for i, id := range ids {
		if l.At(i) != id {
			t.Fatalf("At(%d) = %q, want %q", i, l.At(i), id)
		}
	}
	p, err := session.PackIDs("a1bcde", []uint32{2, 2, 5, 6})
	if err != nil || p.At(2) != "bcd" {
		t.Fatalf("PackIDs: %v %q", err, p.At(2))
	}
	for _, bad := range [][]uint32{{3, 2}, {2, 7}} {
		if _, err := session.PackIDs("a1bcde", bad); !errors.Is(err, session.ErrInvalidEntry) {
			t.Fatalf("PackIDs with ends %v: %v, want refused", bad, err)
		}
	}
}
