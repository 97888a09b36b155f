package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// While `serve` runs on a data dir, other invocations on that dir reach
// it through the URL it leaves there instead of starting a node.
func TestServeIsSharedByOtherInvocations(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var out, errb bytes.Buffer
	var code int
	wg.Add(1)
	go func() {
		defer wg.Done()
		code = Run(ctx, []string{"serve", "-data", data, "-listen", "127.0.0.1:0"}, strings.NewReader(""), &out, &errb)
	}()
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if _, err := os.Stat(serveURLFile(data)); err != nil {
			return err
		}
		return nil
	})
	if got := mustRun(t, data, "", "new", "-id", "shared"); got != "shared" {
		t.Fatalf("new via serve printed %q", got)
	}
	mustRun(t, data, "", "append", "shared", "-text", "through the server")
	if tree := mustRun(t, data, "", "tree", "shared"); !strings.Contains(tree, "through the server") {
		t.Fatalf("tree:\n%s", tree)
	}
	cancel()
	wg.Wait()
	if code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(serveURLFile(data)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("serve left its URL file behind")
	}
	// After serve stops, invocations start their own node on the same data.
	if tree := mustRun(t, data, "", "tree", "shared"); !strings.Contains(tree, "through the server") {
		t.Fatalf("tree after serve stopped:\n%s", tree)
	}
}
