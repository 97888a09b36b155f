package main

import (
	"strings"
	"testing"
)

// archive -delete then unarchive brings a session back as it was, on the
// embedded node (the object store) and to a directory.
func TestArchiveVerbs(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "a1")
	mustRun(t, data, "", "append", "a1", "-text", "keep me")
	before := mustRun(t, data, "", "context", "a1")
	for _, where := range [][]string{nil, {"-dir", t.TempDir()}} {
		out := mustRun(t, data, "", append([]string{"archive", "a1", "-delete"}, where...)...)
		if !strings.Contains(out, "deleted") {
			t.Fatalf("archive said %q", out)
		}
		if code, _, _ := runIn(t, data, "", "context", "a1"); code == 0 {
			t.Fatal("the archived session is still there")
		}
		mustRun(t, data, "", append([]string{"unarchive", "a1"}, where...)...)
		if got := mustRun(t, data, "", "context", "a1"); got != before {
			t.Fatalf("context after unarchive:\n%s\nwant\n%s", got, before)
		}
	}
	if code, _, stderr := runIn(t, data, "", "unarchive", "nope"); code == 0 || !strings.Contains(stderr, "not archived") {
		t.Fatalf("unarchive of nothing: %d %s", code, stderr)
	}
}
