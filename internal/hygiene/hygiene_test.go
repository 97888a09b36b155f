// Package hygiene checks the repository itself: what is tracked, and that
// the pure core stays pure.
package hygiene

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTracked is the largest file tracked outside testdata.
const maxTracked = 1 << 20

// Nothing tracked outside testdata is a binary (a NUL byte in its first
// 8000 bytes, git's own test) or over 1 MB: a test binary once was, 6.5 MB
// of it, although .gitignore lists *.test.
func TestTrackedFilesAreSmallText(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot list tracked files")
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to check", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 10 {
		t.Fatalf("git lists %d files: not the repository", len(files))
	}
	for _, f := range files {
		if strings.Contains("/"+f, "/testdata/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > maxTracked {
			t.Errorf("%s is tracked and %d bytes (over %d outside testdata)", f, len(b), maxTracked)
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			t.Errorf("%s is tracked and binary", f)
		}
	}
}
