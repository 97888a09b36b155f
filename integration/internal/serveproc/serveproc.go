// Package serveproc runs `sessionlog serve` processes for the
// integration tests, and talks to them as clients do.
package serveproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Proc is a `sessionlog serve` process and what it printed.
type Proc struct {
	Cmd  *exec.Cmd
	Log  *clustertest.SyncBuffer
	Data string
	URL  string
	// CLIErr is what the CLI run by CLI printed on stderr.
	CLIErr string
	bin    string
}

// Start runs the binary bin's serve on data with args until the test
// ends and waits for its URL.
func Start(t *testing.T, bin, data string, args ...string) *Proc {
	t.Helper()
	return StartLimited(t, bin, data, 0, args...)
}

// StartLimited is Start under a descriptor limit (0: the test's own):
// serve then runs under sh, after ulimit -n.
func StartLimited(t *testing.T, bin, data string, nofile int, args ...string) *Proc {
	t.Helper()
	p := &Proc{Log: &clustertest.SyncBuffer{}, Data: data, bin: bin}
	os.Remove(filepath.Join(data, "serve.url"))
	serve := append([]string{"serve", "-data", data, "-listen", "127.0.0.1:0", "-http", ""}, args...)
	if nofile > 0 {
		p.Cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf("ulimit -n %d && exec \"$@\"", nofile), "sh", bin}, serve...)...)
	} else {
		p.Cmd = exec.Command(bin, serve...)
	}
	p.Cmd.Stdout, p.Cmd.Stderr = p.Log, p.Log
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		p.Cmd.Wait()
		if t.Failed() {
			t.Logf("serve %v:\n%s", args, Tail(p.Log.String(), 40))
		}
	})
	sessiontest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		b, err := os.ReadFile(filepath.Join(data, "serve.url"))
		p.URL = strings.TrimSpace(string(b))
		return err
	})
	return p
}

// CLI runs the binary's verb args against the node and gives its output.
func (p *Proc) CLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(p.bin, append(args, "-url", p.URL)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sessionlog %v: %v\n%s", args, err, stderr.String())
	}
	p.CLIErr += stderr.String()
	return strings.TrimSpace(string(out))
}

// Client is a sessionlog client on url (as user, with a password of
// user-pw, unless user is "") until the test ends.
func Client(t *testing.T, url, user string) *api.Client {
	t.Helper()
	var opts []nats.Option
	if user != "" {
		opts = append(opts, nats.UserInfo(user, user+"-pw"))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return api.NewClient(nc, "sessionlog.v1")
}

// AppendMessages appends n user messages of text to session, one a
// request, and returns their ids.
func AppendMessages(t *testing.T, c *api.Client, session, text string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		var r api.AppendReply
		for {
			err := c.Call(context.Background(), api.OpAppend, api.AppendRequest{Session: session, Entries: []jsontext.Value{
				jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + text + `"}}`)}}, &r)
			var ae *api.Error
			if errors.As(err, &ae) && ae.Code == api.CodeRateLimited {
				// The node's bound on one client's requests: as a client
				// would, after the pause it asks for.
				time.Sleep(time.Duration(max(ae.RetryAfterMs, 10)) * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("the edge refused a write: %v", err)
			}
			break
		}
		ids = append(ids, r.Entries[0].ID)
	}
	return ids
}

// HubHolds waits until the hub (c) holds as many entries of sessions as
// want has, and fails unless they are want's, each once, in order.
func HubHolds(t *testing.T, c *api.Client, want []string, sessions ...string) {
	t.Helper()
	var got []string
	sessiontest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		got = got[:0]
		for _, s := range sessions {
			var r api.EntriesReply
			if err := c.Call(context.Background(), api.OpEntries, api.EntriesRequest{Session: s, Limit: 1000}, &r); err != nil {
				return err
			}
			for _, raw := range r.Entries {
				var e struct{ ID string }
				json.Unmarshal(raw, &e)
				got = append(got, e.ID)
			}
		}
		if len(got) < len(want) {
			return fmt.Errorf("%d of %d entries at the hub", len(got), len(want))
		}
		return nil
	})
	if !slices.Equal(got, want) {
		t.Fatalf("the hub holds %d entries, the edge acknowledged %d (or in another order)", len(got), len(want))
	}
}

// Tail is the last lines of s.
func Tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}

// Main is a TestMain of the integration tests: it builds sessionlog into
// a temporary directory, sets *bin to it, runs the tests, and exits with
// their code.
func Main(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "sessionlog-integration-")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "sessionlog")
	build := exec.Command("go", "build", "-o", *bin, "github.com/agentcore/sessionlog/cmd/sessionlog")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Println("build sessionlog:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
