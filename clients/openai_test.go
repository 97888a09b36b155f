package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The OpenAI Agents SDK the session adapter is held to.
var agentsPackages = []string{"@openai/agents-core@0.20.0"}

// The SDK's own MemorySession and SessionlogSession, given the same
// operations (adds, pops, clears, history mutations, both transaction
// kinds with repeats and mismatches, invalid transactions), give the same
// reads and the same failures, and another process reads the same
// (clients/typescript/test-openai/session.test.mjs).
func TestOpenAIAgentsSession(t *testing.T) {
	app := clientApp(t, ".oa-test", "OpenAI Agents SDK", agentsPackages...)
	node, _ := exec.LookPath("node")
	script, err := os.ReadFile(filepath.Join("typescript", "test-openai", "session.test.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "session.test.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	url, user, password, _ := gatewayFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "session.test.mjs")
	cmd.Dir = app
	cmd.Env = append(os.Environ(), "SESSIONLOG_TEST_URL="+url, "SESSIONLOG_TEST_USER="+user, "SESSIONLOG_TEST_PASSWORD="+password)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 1") || !strings.Contains(string(out), "# skipped 0") {
		t.Fatalf("node --test session.test.mjs: %v\n%s", err, out)
	}
}
