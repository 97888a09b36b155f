package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// While `serve` runs on a data dir, other invocations on that dir reach
// it through the URL it leaves there instead of starting a node.
func TestServeIsSharedByOtherInvocations(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var out clustertest.SyncBuffer
	var errb bytes.Buffer
	var code int
	wg.Add(1)
	go func() {
		defer wg.Done()
		code = Run(ctx, []string{"serve", "-data", data, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0"}, strings.NewReader(""), &out, &errb)
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
	// The same session through serve's HTTP gateway and its service.
	_, httpURL, ok := strings.Cut(strings.TrimSpace(out.String()), "HTTP ")
	httpURL, _, _ = strings.Cut(httpURL, ";")
	if !ok {
		t.Fatalf("serve did not announce its gateway: %q", out.String())
	}
	res, err := http.Get(httpURL + "/v1/sessions/shared/context")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "through the server") {
		t.Fatalf("gateway context: %d %s", res.StatusCode, body)
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

// Three `serve` processes' worth of nodes form a cluster from flags; the
// stream is replicated three ways and a session written through one node
// reads back through another.
func TestServeCluster(t *testing.T) {
	cfgs, err := cluster.LocalConfigs(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([]*bytes.Buffer, 3)
	stops := make([]context.CancelFunc, 3)
	for i, c := range cfgs {
		outs[i] = &bytes.Buffer{}
		args := []string{"serve", "-data", c.DataDir, "-listen", c.Listen, "-name", c.ServerName,
			"-cluster", c.Cluster.Name, "-cluster-listen", c.Cluster.Listen, "-cluster-size", "3",
			"-routes", strings.Join(c.Cluster.Routes, ","), "-http", ""}
		ctx, cancel := context.WithCancel(context.Background())
		stops[i] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			var errb bytes.Buffer
			if code := Run(ctx, args, strings.NewReader(""), outs[i], &errb); code != 0 {
				t.Errorf("serve %d: exit %d: %s", i, code, errb.String())
			}
		}()
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
		wg.Wait()
	}()
	for _, c := range cfgs {
		sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			_, err := os.Stat(serveURLFile(c.DataDir))
			return err
		})
	}
	url1, url3 := "nats://"+cfgs[0].Listen, "nats://"+cfgs[2].Listen
	if got := mustRun(t, "", "", "new", "-id", "c1", "-url", url1); got != "c1" {
		t.Fatalf("new printed %q", got)
	}
	mustRun(t, "", "", "append", "c1", "-text", "replicated", "-url", url1)
	if tree := mustRun(t, "", "", "tree", "c1", "-url", url3); !strings.Contains(tree, "replicated") {
		t.Fatalf("tree through another node:\n%s", tree)
	}
	for _, o := range outs {
		if !strings.Contains(o.String(), "stream replicas 3") {
			t.Errorf("serve said: %s", o.String())
		}
	}
	nc, err := nats.Connect(url3)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Every node serves the service: what the CLI wrote through node 1 is
	// there for a request answered by any of them.
	var o slapi.SessionReply
	if err := slapi.NewClient(nc, "sessionlog.v1").Call(context.Background(), slapi.OpOpen, slapi.SessionRequest{Session: "c1"}, &o); err != nil || o.Session.Entries != 1 {
		t.Fatalf("open through the service: %+v %v", o, err)
	}
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), "SESSIONS")
	if err != nil || s.CachedInfo().Config.Replicas != 3 {
		t.Fatalf("stream replicas: %v %v", err, s)
	}

	// status on the cluster: three servers, a leader and two current
	// followers for the partition, no warnings; with a node stopped, a
	// warning names it and status exits 1.
	var status string
	sessiontest.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		code, out, stderr := runIn(t, "", "", "status", "-url", url1)
		if code != 0 {
			return fmt.Errorf("status: exit %d: %s\n%s", code, stderr, out)
		}
		status = out
		return nil
	})
	for _, want := range []string{"3 server(s): " + cfgs[0].ServerName, "no warnings", "SESSIONS", "KV_SESSIONS_INDEX"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	stops[2]()
	sessiontest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		code, out, _ := runIn(t, "", "", "status", "-url", url1)
		if code != 1 || !strings.Contains(out, "WARNINGS") || !strings.Contains(out, cfgs[2].ServerName) {
			return fmt.Errorf("status with a node stopped: exit %d\n%s", code, out)
		}
		return nil
	})
}

// serve stops within its bound whatever clients do: here one sends a
// body that never comes and twenty keep connections idle.
func TestServeStopsDespiteSlowClients(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out clustertest.SyncBuffer
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "-data", data, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0"}, strings.NewReader(""), &out, &errb)
	}()
	var addr string
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		_, u, ok := strings.Cut(strings.TrimSpace(out.String()), "HTTP http://")
		if !ok {
			return errors.New("serve has not announced its gateway")
		}
		addr, _, _ = strings.Cut(u, ";")
		return nil
	})
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exit %d: %s", code, errb.String())
		}
	case <-time.After(stopGrace + 15*time.Second):
		t.Fatal("serve did not stop: clients held it")
	}
}
