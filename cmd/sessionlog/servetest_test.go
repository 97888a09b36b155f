package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/nats-io/nats.go"
)

// serveFor runs `sessionlog serve -data data` with more args until the
// test ends, and returns once it has written its URL (it is ready), with
// what it printed.
func serveFor(t *testing.T, data string, args ...string) (stdout, stderr *clustertest.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stdout, stderr = &clustertest.SyncBuffer{}, &clustertest.SyncBuffer{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		Run(ctx, append([]string{"serve", "-data", data, "-listen", "127.0.0.1:0"}, args...), strings.NewReader(""), stdout, stderr)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		_, err := os.Stat(serveURLFile(data))
		return err
	})
	return stdout, stderr
}

// connectServe connects to the serve running on data (the URL it left in
// serve.url), until the test ends.
func connectServe(t *testing.T, data string) *nats.Conn {
	t.Helper()
	url, err := os.ReadFile(serveURLFile(data))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(strings.TrimSpace(string(url)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
