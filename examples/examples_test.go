// Package examples runs the client examples against a real node, service
// and gateway when their toolchains are installed.
package examples

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/service/servicetest"
)

func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python example is not run")
	}
	ts := servicetest.StartTenants(t, cluster.Tenant{Name: "demo", Users: []cluster.User{{Name: "agent", Password: "agent-pw"}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gcfg := gateway.DefaultConfig("127.0.0.1:0", ts.Node.ClientURL())
	gcfg.Auth = true
	g, err := gateway.Start(ctx, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())

	cmd := exec.CommandContext(ctx, python, "python/sessionlog_client.py", "--url", g.URL(), "--user", "agent", "--password", "agent-pw", "--session", "from-python")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("example failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var summary struct {
		Session   string
		Leaf      string
		Sequence  uint64
		Messages  int
		Conflicts int
		Missing   string
		ImageOk   bool
		BlobOk    bool
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &summary); err != nil {
		t.Fatalf("last line is not the summary: %v\n%s", err, out)
	}
	if summary.Messages != 4 || summary.Conflicts != 1 || summary.Missing != "not_found" || !summary.ImageOk || !summary.BlobOk {
		t.Fatalf("summary %+v\n%s", summary, out)
	}
	// What the example wrote is there, as the Go client sees it.
	nc, err := ts.Node.ConnectTenant("demo")
	if err != nil {
		t.Fatal(err)
	}
	var cx api.ContextReply
	if err := api.NewClient(nc, "sessionlog.v1").Call(ctx, api.OpContext, api.ContextRequest{Session: "from-python"}, &cx); err != nil {
		t.Fatal(err)
	}
	if cx.Leaf != summary.Leaf || cx.Sequence != summary.Sequence || !strings.Contains(string(cx.Messages), `"text":"4"`) {
		t.Fatalf("context %+v, example said leaf %s seq %d", cx, summary.Leaf, summary.Sequence)
	}
	// Wrong credentials fail with the gateway's 401, reported by the client.
	bad := exec.CommandContext(ctx, python, "python/sessionlog_client.py", "--url", g.URL(), "--user", "agent", "--password", "nope")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "unauthorized (401)") {
		t.Fatalf("wrong password: %v\n%s", err, out)
	}
}
