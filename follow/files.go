package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/outline"
)

// Which files of a folder are sessions: those named *.jsonl that are
// regular files. A FIFO, a device or a socket under that name would block
// a reader or never end, so it is passed over. A symbolic link is taken
// only when it leads to a regular file inside the folder walked (after
// resolving the folder's own links), unless links are allowed: a link in
// a synced or shared folder must not bring any file the user can read
// into the store. Directories reached through links are not walked.
// Follow and import both choose their files here.

// ErrOutside is a link that leads out of the folder walked.
var ErrOutside = errors.New("follow: a link out of the folder")

// Files returns the session files under dir, in walk (lexical) order;
// each file passed over, and why, goes to skipped (nil: not said).
func Files(dir string, links bool, skipped func(path string, err error)) ([]string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable corner: skip it
		}
		if d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		if err := sessionFile(p, d.Type(), root, links); err != nil {
			if skipped != nil {
				skipped(p, err)
			}
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// sessionFile says whether p (of type mode, as the walk saw it) is a file
// to read.
func sessionFile(p string, mode fs.FileMode, root string, links bool) error {
	if mode&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		if !links && !inside(root, target) {
			return fmt.Errorf("%w (to %s; allow links to follow it)", ErrOutside, target)
		}
		st, err := os.Stat(target)
		if err != nil {
			return err
		}
		mode = st.Mode()
	}
	if !mode.IsRegular() {
		return fmt.Errorf("%w: a %s", filestore.ErrNotRegular, filestore.KindOf(mode))
	}
	return nil
}

// inside reports whether path is root or under it.
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// shown is a path for the log: quoted when it holds what could act on a
// terminal (a file name is anyone's to choose).
func shown(p string) string {
	if !utf8.ValidString(p) || strings.ContainsFunc(p, outline.Hazard) {
		return strconv.Quote(p)
	}
	return p
}
