package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that only calls sessionlog builds without the server: the
// package imports neither nats-server, bleve, nor sessionlog's storage.
func TestImportsNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentcore/sessionlog/api").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps gave %d packages", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{"nats-server", "blevesearch", "sessionlog/stream", "sessionlog/service", "sessionlog/cluster", "sessionlog/search", "sessionlog/telemetry", "sessionlog/codec"} {
			if strings.Contains(d, banned) {
				t.Errorf("api depends on %s", d)
			}
		}
	}
}
