package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that only calls sessionlog builds without the server: the
// protocol (api), and the MCP server that speaks it (mcpserver), import
// neither nats-server, bleve, nor sessionlog's storage.
func TestImportsNoServer(t *testing.T) {
	for pkg, banned := range map[string][]string{
		"api":       {"nats-server", "blevesearch", "sessionlog/stream", "sessionlog/service", "sessionlog/cluster", "sessionlog/search", "sessionlog/telemetry", "sessionlog/codec"},
		"mcpserver": {"nats-server", "blevesearch", "sessionlog/stream", "sessionlog/service", "sessionlog/cluster", "sessionlog/search"},
	} {
		out, err := exec.Command("go", "list", "-deps", "github.com/agentcore/sessionlog/"+pkg).CombinedOutput()
		if err != nil {
			t.Skipf("go list: %v: %s", err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 20 {
			t.Fatalf("go list -deps %s gave %d packages", pkg, len(deps))
		}
		for _, d := range deps {
			for _, b := range banned {
				if strings.Contains(d, b) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}
