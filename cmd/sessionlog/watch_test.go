package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// watchIn runs a watch until it exits, returning its stdout and code.
func watchIn(t *testing.T, data string, args ...string) (wait func() (int, string)) {
	t.Helper()
	var out, errb clustertest.SyncBuffer
	var code int
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	wg.Add(1)
	go func() {
		defer wg.Done()
		code = Run(ctx, append([]string{"watch", "-data", data}, args...), strings.NewReader(""), &out, &errb)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() (int, string) {
		wg.Wait()
		if code != 0 {
			t.Logf("watch stderr: %s", errb.String())
		}
		return code, out.String()
	}
}

// entriesOf are the entry texts a watch printed.
func entriesOf(t *testing.T, out string) []string {
	t.Helper()
	var texts []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var v struct {
			Entry struct {
				Message struct{ Content string }
			}
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("watch printed %q: %v", line, err)
		}
		texts = append(texts, v.Entry.Message.Content)
	}
	return texts
}

// A watch starts now by default and runs beside other invocations on the
// same data dir (no serve): they append through its node.
func TestWatchBesideOtherInvocations(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "w1")
	mustRun(t, data, "", "append", "w1", "-text", "history")
	wait := watchIn(t, data, "-type", "message", "-n", "2")
	// The watch's consumer may come a moment after its node: append until
	// two arrive after it started.
	appendWhileWatching(t, data, "w1", "live")
	code, out := wait()
	if texts := entriesOf(t, out); code != 0 || len(texts) != 2 || texts[0] != "live" || texts[1] != "live" {
		t.Fatalf("watch (exit %d) printed %q", code, texts)
	}
	if _, err := os.Stat(serveURLFile(data)); err == nil {
		t.Fatal("the watch left its serve.url behind")
	}
}

// -from start replays history; a durable is resumable, removed with
// -rm-durable, and starts where -from says when new.
func TestWatchFromAndDurables(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "w2")
	for _, text := range []string{"a", "b", "c"} {
		mustRun(t, data, "", "append", "w2", "-text", text)
	}
	code, out := watchIn(t, data, "-type", "message", "-from", "start", "-n", "3")()
	if texts := entriesOf(t, out); code != 0 || strings.Join(texts, "") != "abc" {
		t.Fatalf("watch -from start: %d %q", code, texts)
	}
	code, out = watchIn(t, data, "-type", "message", "-durable", "d1", "-n", "2")()
	if texts := entriesOf(t, out); code != 0 || strings.Join(texts, "") != "ab" {
		t.Fatalf("durable, first run: %d %q", code, texts)
	}
	code, out = watchIn(t, data, "-type", "message", "-durable", "d1", "-n", "1")()
	if texts := entriesOf(t, out); code != 0 || strings.Join(texts, "") != "c" {
		t.Fatalf("durable, resumed: %d %q", code, texts)
	}
	if got := mustRun(t, data, "", "watch", "-rm-durable", "d1"); !strings.Contains(got, "removed durable d1") {
		t.Fatalf("rm-durable: %q", got)
	}
	if code, _, stderr := runIn(t, data, "", "watch", "-rm-durable", "d1"); code != 1 || !strings.Contains(stderr, "no durable") {
		t.Fatalf("rm-durable again: %d %q", code, stderr)
	}
	// A new durable from now sees only what comes after it.
	wait := watchIn(t, data, "-type", "message", "-durable", "d2", "-from", "now", "-n", "1")
	appendWhileWatching(t, data, "w2", "d")
	if code, out := wait(); code != 0 || strings.Join(entriesOf(t, out), "") != "d" {
		t.Fatalf("a new durable from now: %d %q", code, entriesOf(t, out))
	}
	if code, _, stderr := runIn(t, data, "", "watch", "-type", "message", "-from", "yesterday"); code != 2 || !strings.Contains(stderr, "yesterday") {
		t.Fatalf("-from yesterday: %d %q", code, stderr)
	}
}

// appendWhileWatching waits for the watch's node (its serve.url), then
// appends text to id every 100 ms until the watch is done.
func appendWhileWatching(t *testing.T, data, id, text string) {
	t.Helper()
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		_, err := os.Stat(serveURLFile(data))
		return err
	})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range 50 {
			if _, err := os.Stat(serveURLFile(data)); err != nil {
				return // the watch is done
			}
			runIn(t, data, "", "append", id, "-text", text)
			<-tick.C
		}
	}()
}
