package stream_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// A process appending through its embedded node is killed with SIGKILL
// mid-stream; a node restarted on the same data dir has every entry the
// process acknowledged, the session opens, and appends go on.
func TestKillEmbeddedNodeDuringAppends(t *testing.T) {
	if dir := os.Getenv("SESSIONLOG_KILL_CHILD"); dir != "" {
		killChild(dir)
		return
	}
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillEmbeddedNodeDuringAppends$")
		cmd.Env = append(os.Environ(), "SESSIONLOG_KILL_CHILD="+dir, fmt.Sprintf("SESSIONLOG_KILL_ROUND=%d", round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked []string
		sc := bufio.NewScanner(out)
		stopAt := 40 + 60*round
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "ACK "); ok {
				acked = append(acked, id)
				if len(acked) == stopAt {
					break
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if len(acked) < stopAt {
			t.Fatalf("round %d: child stopped after %d acks", round, len(acked))
		}

		ctx := context.Background()
		n, err := cluster.Start(ctx, cluster.DefaultConfig(dir))
		if err != nil {
			t.Fatalf("round %d: restart: %v", round, err)
		}
		nc2, _ := n.Connect()
		b, err := stream.New(ctx, nc2, stream.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.OpenStore(ctx, "killed")
		if err != nil {
			t.Fatalf("round %d: open after kill: %v", round, err)
		}
		have := map[string]bool{}
		es, _ := s.Entries(ctx)
		for _, e := range es {
			have[e.ID] = true
		}
		lost := 0
		for _, id := range acked {
			if !have[id] {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("round %d: %d of %d acknowledged entries lost", round, lost, len(acked))
		}
		cfg := sessiontest.TestConfig()
		cfg.IDs = session.IDFunc(func() string { return fmt.Sprintf("after-%d", round) })
		sess, _ := session.New(s, cfg)
		if _, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("after")}); err != nil {
			t.Errorf("round %d: append after restart: %v", round, err)
		}
		s.Close(ctx)
		n.Close(ctx)
	}
}

func killChild(dir string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	n, err := cluster.Start(ctx, cluster.DefaultConfig(dir))
	if err != nil {
		fail(err)
	}
	nc, err := n.Connect()
	if err != nil {
		fail(err)
	}
	b, err := stream.New(ctx, nc, stream.DefaultConfig())
	if err != nil {
		fail(err)
	}
	s, err := b.OpenStore(ctx, "killed")
	if err != nil {
		st, cerr := b.CreateStore(ctx, sessiontest.TestHeader("killed"))
		if cerr != nil {
			fail(cerr)
		}
		s = st
	}
	round := os.Getenv("SESSIONLOG_KILL_ROUND")
	i := 0
	cfg := sessiontest.TestConfig()
	cfg.IDs = session.IDFunc(func() string { i++; return fmt.Sprintf("r%s-%06d", round, i) })
	sess, _ := session.New(s, cfg)
	big := strings.Repeat("payload ", 256)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		e, err := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(big)})
		if err != nil {
			fail(err)
		}
		fmt.Println("ACK", e.ID)
	}
	os.Exit(0)
}
