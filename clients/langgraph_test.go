package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The LangGraph packages the saver is held to, and the test runner the
// validation suite is written for.
var langGraphPackages = []string{
	"@langchain/langgraph-checkpoint-validation@1.1.1", "@langchain/langgraph-checkpoint@1.2.2",
	"@langchain/core@1.4.0", "vitest@4.1.12", "@langchain/langgraph@1.7.3",
}

// langGraphApp makes the application the LangGraph tests run from.
func langGraphApp(t *testing.T) string {
	return clientApp(t, ".lg-test", "LangGraph", langGraphPackages...)
}

// clientApp makes an application in the build tree (typescript/dir) that
// installed packages and this client as users do — the client copied, not
// linked, so that it resolves its peers from the application, as an
// install from the registry does — and returns its directory; without
// node, npm or the registry the test skips, naming what was not tested.
func clientApp(t *testing.T, dir, what string, packages ...string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		skipPeer(t, "npm is not installed: the %s tests are not run", what)
	}
	if _, err := exec.LookPath("node"); err != nil {
		skipPeer(t, "node is not installed: the %s tests are not run", what)
	}
	app, _ := filepath.Abs(filepath.Join("typescript", dir))
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name":"app","private":true,"type":"module"}`), 0o644)
	// The client as it is now: a copy npm would keep as "up to date".
	os.RemoveAll(filepath.Join(app, "node_modules", "@sessionlog"))
	self, _ := filepath.Abs("typescript")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--install-links", self}, packages...)...)
	install.Dir = app
	if out, err := install.CombinedOutput(); err != nil {
		skipPeer(t, "npm install of %s and the client failed (%v: %s): the %s tests are not run", what, err, lastLine(out), what)
	}
	return app
}

// vitestResult is what vitest's JSON reporter says of one test.
type vitestResult struct {
	FullName string `json:"fullName"`
	Status   string `json:"status"`
}

// LangGraph's checkpointer validation suite, unmodified, passes every
// test for SessionlogSaver that it passes for LangGraph's own MemorySaver
// in the same run (and the one MemorySaver skips: channel values stored
// by version, as LangGraph's Postgres saver stores them).
func TestLangGraphValidation(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, langGraphApp(t), node, "test-langgraph/validate.test.js")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	results := filepath.Join(t.TempDir(), "results.json")
	cmd := a.cmd(ctx, filepath.Join("node_modules", "vitest", "vitest.mjs"), "run", "--globals",
		"--reporter=default", "--reporter=json", "--outputFile.json="+results, "validate.test.mjs")
	cmd.Env = append(cmd.Env, "CI=true")
	out, runErr := cmd.CombinedOutput()
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("vitest wrote no results (%v): %v\n%s", runErr, err, out)
	}
	var report struct {
		TestResults []struct {
			AssertionResults []vitestResult `json:"assertionResults"`
		} `json:"testResults"`
	}
	if err := json.Unmarshal(b, &report); err != nil {
		t.Fatal(err)
	}
	// The two runs of the suite list the same tests in the same order
	// (parametrised ones share names: they are compared by place).
	var ours, memory []vitestResult
	for _, f := range report.TestResults {
		for _, r := range f.AssertionResults {
			switch {
			case strings.HasPrefix(r.FullName, "sessionlog "):
				r.FullName = strings.ReplaceAll(r.FullName, "sessionlog", "X")
				ours = append(ours, r)
			case strings.HasPrefix(r.FullName, "MemorySaver "):
				r.FullName = strings.ReplaceAll(r.FullName, "MemorySaver", "X")
				memory = append(memory, r)
			}
		}
	}
	count := func(rs []vitestResult, status string) int {
		n := 0
		for _, r := range rs {
			if r.Status == status {
				n++
			}
		}
		return n
	}
	t.Logf("LangGraph's validation suite: sessionlog %d passed, %d failed, %d skipped; MemorySaver %d passed, %d failed, %d skipped",
		count(ours, "passed"), count(ours, "failed"), count(ours, "skipped"), count(memory, "passed"), count(memory, "failed"), count(memory, "skipped"))
	if len(memory) < 700 || len(ours) != len(memory) {
		t.Fatalf("the suite ran %d tests for sessionlog and %d for MemorySaver:\n%s", len(ours), len(memory), lastLines(out, 60))
	}
	for i, m := range memory {
		if ours[i].FullName != m.FullName && m.Status != "skipped" { // a skipped test says why in its name
			t.Fatalf("test %d is %q for sessionlog and %q for MemorySaver", i, ours[i].FullName, m.FullName)
		}
		if m.Status == "passed" && ours[i].Status != "passed" {
			t.Errorf("%s: %s for sessionlog, passed for MemorySaver", m.FullName, ours[i].Status)
		}
	}
	if n := count(ours, "failed") + count(ours, "skipped"); n > 0 {
		t.Errorf("%d of the suite's tests did not pass for sessionlog:\n%s", n, lastLines(out, 60))
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// A real StateGraph of LangGraph on SessionlogSaver, with scripted nodes:
// one process runs it to an interrupt, another resumes it, a third goes
// back to an earlier state with another input and runs on — a branch in
// the session's tree. The thread id is no session id.
func TestLangGraphStateGraph(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, langGraphApp(t), node, "test-langgraph/graph.mjs")
	thread := "a thread / with spaces, ü and " + strings.Repeat("x", 200)
	phase := func(name string) map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := a.cmd(ctx, "graph.mjs", name, thread)
		cmd.Env = append(cmd.Env, "SESSIONLOG_TEST_NAMESPACE=graph")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("graph.mjs %s: %v\n%s%s", name, err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(lastLine(out)), &v); err != nil {
			t.Fatalf("graph.mjs %s printed %q", name, out)
		}
		return v
	}
	steps := func(v map[string]any) string {
		b, _ := json.Marshal(v["steps"])
		return string(b)
	}
	if v := phase("start"); steps(v) != `["plan add retries","review 1"]` || fmt.Sprint(v["next"]) != "[act]" {
		t.Fatalf("start: %v", v)
	}
	if v := phase("resume"); steps(v) != `["plan add retries","review 1","act on add retries"]` || fmt.Sprint(v["next"]) != "[]" {
		t.Fatalf("resume in another process: %v", v)
	}
	v := phase("fork")
	if steps(v) != `["plan add retries","review 1","act on add backoff"]` || v["branches"] != float64(1) || v["stray"] != float64(0) {
		t.Fatalf("fork from after plan: %v", v)
	}
	// A large channel value goes to blob storage, as images do, and comes
	// back whole.
	if v := phase("big"); v["same"] != true || v["storedApart"] != true {
		t.Fatalf("a 3 MiB channel value: %v", v)
	}
	// Entries of the saver's types that another client wrote in another
	// shape are passed over: the thread still reads.
	if v := phase("damaged"); v["same"] != true {
		t.Fatalf("after damaged entries: %v", v)
	}
}

// readmeExample returns the code block that follows the marker
// "<!-- example: NAME -->" in the client's README.
func readmeExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("typescript", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- example: "+name+" -->\n```js\n")
	code, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatalf("the README has no example %q", name)
	}
	return code
}

// The README's LangGraph example runs as written, and prints what it says.
func TestLangGraphReadmeExample(t *testing.T) {
	out := runReadmeExample(t, langGraphApp(t), "langgraph")
	if !strings.Contains(out, "[ 'drafted', 'checked 1' ]") || !strings.Contains(out, "session lg-") {
		t.Fatalf("the README's example printed:\n%s", out)
	}
}

// runReadmeExample runs the client README's example name from app, with
// SESSIONLOG_URL naming a gateway, and returns what it printed.
func runReadmeExample(t *testing.T, app, name string) string {
	t.Helper()
	node := testNode(t)
	a := newAppTest(t, app, node)
	if err := os.WriteFile(filepath.Join(a.app, "example.mjs"), []byte(readmeExample(t, name)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := a.cmd(ctx, "example.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("the README's example %s: %v\n%s", name, err, out)
	}
	return string(out)
}
