package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// Session files come from anyone: a FIFO, a device behind a .jsonl link,
// a directory are refused at once (never read, never waited on), and a
// listing of a directory holding them lists the real sessions.
func TestOnlyRegularFilesAreRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero on Windows")
	}
	ctx := context.Background()
	dir := t.TempDir()
	r, err := NewRepo(dir, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Create(ctx, session.Header{Version: 3, ID: "real", Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub.jsonl")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		page, err := r.List(ctx, session.ListOptions{})
		if err == nil && (len(page.Sessions) != 1 || page.Sessions[0].ID != "real") {
			err = errors.New("listed " + strings.Repeat("?", len(page.Sessions)))
		}
		for _, p := range []string{fifo, zero, sub} {
			if _, rerr := ReadFile(p, 0); !errors.Is(rerr, ErrNotRegular) {
				err = errors.Join(err, errors.New(p+": "+errString(rerr)))
			}
			// (A directory may be refused by the open itself.)
			if _, oerr := Open(ctx, p, DefaultConfig()); !errors.Is(oerr, ErrNotRegular) && !errors.Is(oerr, syscall.EISDIR) {
				err = errors.Join(err, errors.New(p+" (open): "+errString(oerr)))
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading a FIFO or a device did not return")
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// A listing reads a line at a time and never holds a line over the bound
// (codec's tests show that a load does not decode one).
func TestListingsSkipLongLines(t *testing.T) {
	old := maxLineBytes
	maxLineBytes = 1 << 10
	defer func() { maxLineBytes = old }()
	head := `{"type":"session","version":3,"id":"long","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}`
	short := `{"type":"custom","customType":"x","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z"}`
	long := `{"type":"custom","customType":"x","data":"` + strings.Repeat("y", 4<<10) + `","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z"}`
	data := []byte(head + "\n" + short + "\n" + long + "\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "long.jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	in, ok := fileInfo(filepath.Join(dir, "long.jsonl"))
	if !ok || in.ID != "long" || in.Entries != 2 || in.Leaf != "" {
		t.Fatalf("listing of a file ending in a long line: %+v %v", in, ok)
	}
	// (The line reader itself: internal/lines' TestScan.)
}
