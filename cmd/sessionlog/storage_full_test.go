package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A node whose storage is used up refuses writes as unavailable, naming
// the node and what is full, and goes on answering reads (issue 69: the
// client read "500 internal" with JetStream's "insufficient resources").
func TestFullStorageIsRefusedClearly(t *testing.T) {
	data := t.TempDir()
	serveFor(t, data, "-http", "", "-name", "n-full", "-max-store", fmt.Sprint(6<<20))
	c := slapi.NewClient(connectServe(t, data), slapi.DefaultSubject)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Call(ctx, slapi.OpCreate, slapi.CreateRequest{ID: "full"}, nil); err != nil {
		t.Fatal(err)
	}
	line := jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + strings.Repeat("f", 100<<10) + `"}}`)
	var refused *slapi.Error
	stored := 0
	for range 200 {
		err := c.Call(ctx, slapi.OpAppend, slapi.AppendRequest{Session: "full", Entries: []jsontext.Value{line}}, nil)
		if errors.As(err, &refused) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	if refused == nil {
		t.Fatalf("200 appends of 100 KB stored on a node of 6 MiB")
	}
	if refused.Code != slapi.CodeUnavailable || !strings.Contains(refused.Message, "storage of node n-full is full") {
		t.Fatalf("after %d appends: %v, want unavailable naming the full node", stored, refused)
	}
	var cr slapi.ContextReply
	if err := c.Call(ctx, slapi.OpContext, slapi.ContextRequest{Session: "full"}, &cr); err != nil {
		t.Fatalf("a read on a full node: %v", err)
	}
	if cr.Total != stored {
		t.Fatalf("the context holds %d messages, %d were acknowledged", cr.Total, stored)
	}
}

// status says how much of the data dir's file system is free, and warns
// below -disk-warn (here: always, at 100%), naming the node.
func TestStatusSaysFreeStorage(t *testing.T) {
	for _, tc := range []struct {
		warn string
		want string
		fail bool
	}{{"0", "note: storage: ", false}, {"100", "storage of node n-disk: only ", true}} {
		data := t.TempDir()
		serveFor(t, data, "-http", "", "-name", "n-disk", "-disk-warn", tc.warn)
		url, err := os.ReadFile(serveURLFile(data))
		if err != nil {
			t.Fatal(err)
		}
		code, out, _ := runIn(t, "", "", "status", "-url", strings.TrimSpace(string(url)))
		if !strings.Contains(out, tc.want) || (code != 0) != tc.fail || !strings.Contains(out, data) {
			t.Fatalf("-disk-warn %s: exit %d:\n%s", tc.warn, code, out)
		}
	}
}

// A node whose disk filled up takes writes again by itself once space
// returns, within seconds, with nothing acknowledged lost (issue 69: it
// stayed refusing them until restarted, JetStream's write error stuck).
// The data dir is a 48 MiB tmpfs in a private mount namespace, grown to
// 512 MiB once writes are refused: root and unshare(1) are needed.
func TestWritesComeBackWhenSpaceReturns(t *testing.T) {
	if dir := os.Getenv("SESSIONLOG_TMPFS_CHILD"); dir != "" {
		fillAndGrow(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("fills a 48 MiB disk")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a tmpfs in a private mount namespace (unshare -m)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1), to mount a tmpfs in a private mount namespace")
	}
	dir := t.TempDir()
	script := fmt.Sprintf(`mount -t tmpfs -o size=48m tmpfs %q || exit 42; exec %q -test.run='^TestWritesComeBackWhenSpaceReturns$' -test.v`, dir, os.Args[0])
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "SESSIONLOG_TMPFS_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 42 || strings.Contains(string(out), "unshare failed") {
		t.Skipf("cannot mount a tmpfs here (not allowed in this container?): %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWritesComeBackWhenSpaceReturns") {
		t.Fatalf("the process on a tmpfs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// fillAndGrow is TestWritesComeBackWhenSpaceReturns's process, in its
// mount namespace with dir a 48 MiB tmpfs.
func fillAndGrow(t *testing.T, dir string) {
	data := filepath.Join(dir, "data")
	_, stderr := serveFor(t, data, "-http", "", "-name", "n-tmpfs")
	c := slapi.NewClient(connectServe(t, data), slapi.DefaultSubject)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Call(ctx, slapi.OpCreate, slapi.CreateRequest{ID: "s1"}, nil); err != nil {
		t.Fatal(err)
	}
	line := jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + strings.Repeat("t", 100<<10) + `"}}`)
	appendOne := func() error {
		return c.Call(ctx, slapi.OpAppend, slapi.AppendRequest{Session: "s1", Entries: []jsontext.Value{line}}, nil)
	}
	stored := 0
	var refused *slapi.Error
	for range 2000 {
		err := appendOne()
		if errors.As(err, &refused) && refused.Code == slapi.CodeUnavailable {
			break
		}
		if err != nil {
			t.Fatalf("after %d appends: %v", stored, err)
		}
		stored++
	}
	if refused == nil || !strings.Contains(refused.Message, "storage of node n-tmpfs is full") {
		t.Fatalf("after %d appends of 100 KB on 48 MiB: %v, want the full storage said", stored, refused)
	}
	// Still refused while the disk is full; status says so.
	if err := appendOne(); err == nil {
		t.Fatal("a write taken on a full disk")
	}
	if out, err := exec.Command("mount", "-o", "remount,size=512m", dir).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v %s", err, out)
	}
	grown := time.Now()
	sessiontest.CheckFor(t, 20*time.Second, 100*time.Millisecond, appendOne)
	t.Logf("%d appends stored before the disk filled; writes taken again %v after it grew", stored, time.Since(grown).Round(100*time.Millisecond))
	var cr slapi.ContextReply
	if err := c.Call(ctx, slapi.OpContext, slapi.ContextRequest{Session: "s1"}, &cr); err != nil {
		t.Fatal(err)
	}
	if cr.Total != stored+1 {
		t.Fatalf("the session holds %d messages; %d were acknowledged", cr.Total, stored+1)
	}
	if !strings.Contains(stderr.String(), "JetStream restarted, writes are taken again") {
		t.Fatalf("the node did not say it took writes again:\n%s", stderr)
	}
}
