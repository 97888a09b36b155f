package clients

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Peer tests that cannot run here (no python3, npm or registry) skip, and
// say so where it is seen: go test prints a passing package's output only
// with -v, so TestMain names every skipped peer on the terminal itself
// (and on stderr, for -v and CI logs).

var skipped struct {
	sync.Mutex
	why []string
}

// skipPeer skips t, recording why for the summary.
func skipPeer(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	skipped.Lock()
	skipped.why = append(skipped.why, t.Name()+": "+msg)
	skipped.Unlock()
	t.Skip(msg)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if len(skipped.why) > 0 {
		note := fmt.Sprintf("clients: %d peer tests SKIPPED (not run on this machine):\n  %s\n", len(skipped.why), strings.Join(skipped.why, "\n  "))
		fmt.Fprint(os.Stderr, note)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprint(tty, note)
			tty.Close()
		}
	}
	os.Exit(code)
}
