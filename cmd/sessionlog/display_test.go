package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/session/sessiontest"
)

// tree: -depth, -branch and -json cut a large tree down; after move -root
// it says where the leaf is; a lenient read lists what it skipped, in
// line order.
func TestTreeForBigSessions(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "t1")
	var ids []string
	for _, text := range []string{"one", "two", "three", "four"} {
		ids = append(ids, mustRun(t, data, "", "append", "t1", "-text", text))
	}
	mustRun(t, data, "", "move", "t1", ids[1])
	side := mustRun(t, data, "", "append", "t1", "-text", "a side branch")

	if lines := strings.Split(mustRun(t, data, "", "tree", "t1", "-entries", "-depth", "2"), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "two") {
		t.Fatalf("tree -depth 2:\n%s", strings.Join(lines, "\n"))
	}
	branch := mustRun(t, data, "", "tree", "t1", "-branch")
	if !strings.Contains(branch, "a side branch") || strings.Contains(branch, "three") || strings.Contains(branch, "├") {
		t.Fatalf("tree -branch:\n%s", branch)
	}
	var tj struct {
		Session, Leaf string
		Nodes         []struct{ ID, ParentID string }
	}
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "tree", "t1", "-json")), &tj); err != nil || tj.Leaf != side || len(tj.Nodes) != 5 {
		t.Fatalf("tree -json: %+v (%v)", tj, err)
	}
	mustRun(t, data, "", "move", "-root", "t1")
	if tree := mustRun(t, data, "", "tree", "t1"); !strings.Contains(tree, "← leaf: before the first entry") {
		t.Fatalf("tree after move -root:\n%s", tree)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "stats", "t1", "-json")), &st); err != nil || st["messages"] != float64(5) {
		t.Fatalf("stats -json: %v (%v)", st, err)
	}

	// A damaged file: problems found in several passes, listed by line.
	f := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(f, sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), sessiontest.UserLine("b", "ghost-loop"),
		"not json", sessiontest.UserLine("c", "a"), sessiontest.UserLine("c", "a")), 0o600)
	code, out, stderr := runIn(t, "", "", "tree", "-lenient", f)
	if code != 0 || !strings.Contains(out, "c user") {
		t.Fatalf("tree -lenient: %d\n%s\n%s", code, out, stderr)
	}
	if skipped := strings.Count(stderr, "skipped "); skipped < 2 || !sorted(lineNumbers(stderr)) {
		t.Fatalf("tree -lenient listed:\n%s", stderr)
	}
	code, out, _ = runIn(t, "", "", "check", f)
	if code != 1 || !sorted(lineNumbers(out)) {
		t.Fatalf("check, not in line order (exit %d):\n%s", code, out)
	}
	var cj struct{ Problems []struct{ Line int } }
	_, out, _ = runIn(t, "", "", "check", "-json", f)
	if err := json.Unmarshal([]byte(out), &cj); err != nil || len(cj.Problems) < 2 {
		t.Fatalf("check -json: %s (%v)", out, err)
	}
	// Output to something that is not a terminal is never paged.
	if p := pagerFor(&bytes.Buffer{}, func(string) string { return "less" }); p != nil {
		t.Fatalf("a pager for a buffer: %v", p)
	}
	if p := pagerFor(os.NewFile(0, "x"), func(string) string { return "" }); p != nil && !strings.Contains(p[0], "less") {
		t.Fatalf("pager %v", p)
	}
}

// lineNumbers are the numbers after "file:" on each line of out.
func lineNumbers(out string) []int {
	var ns []int
	for _, l := range strings.Split(out, "\n") {
		i := strings.Index(l, ".jsonl:")
		if i < 0 {
			continue
		}
		n, digits := 0, 0
		for _, c := range l[i+len(".jsonl:"):] {
			if c < '0' || c > '9' {
				break
			}
			n, digits = n*10+int(c-'0'), digits+1
		}
		if digits > 0 {
			ns = append(ns, n)
		}
	}
	return ns
}

func sorted(ns []int) bool {
	for i := 1; i < len(ns); i++ {
		if ns[i] < ns[i-1] {
			return false
		}
	}
	return len(ns) > 0
}
