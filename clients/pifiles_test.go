package clients

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// piContextScript prints, for each file, the messages of pi's own
// SessionManager.open + buildSessionContext as JSON (one line each).
const piContextScript = `
import { pathToFileURL } from "node:url";
import { join } from "node:path";
const [modules, ...files] = process.argv.slice(2);
const pi = await import(pathToFileURL(join(modules, "@earendil-works/pi-coding-agent/dist/index.js")).href);
for (const f of files) {
  const sm = pi.SessionManager.open(f, join(modules, "..", "sessions"), "/w");
  console.log(JSON.stringify(sm.buildSessionContext().messages));
}
`

// Damaged pi files read with -lenient give the context pi's own loader
// gives: lines that are not JSON (before the header too) skipped, an entry
// without a parentId or whose parent is in no line kept as a root, the
// last of entries sharing an id kept, a label of a missing entry kept (as
// the last line, the leaf).
func TestLenientReadsAsPiDoes(t *testing.T) {
	node, modules := piNode(t)
	user := func(id, parent, text string) string {
		p := `null`
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"` + text + `","timestamp":1}}`
	}
	label := func(id, parent, target string) string {
		return `{"type":"label","id":"` + id + `","parentId":"` + parent + `","timestamp":"2025-01-01T00:00:02.000Z","targetId":"` + target + `","label":"x"}`
	}
	h := sessiontest.HeaderLine
	cases := map[string][]string{
		"garbage before the header":  {"garbage", "{not json", h, user("a", "", "one")},
		"a line that is not JSON":    {h, user("a", "", "one"), "}{", user("b", "a", "two")},
		"no parentId":                {h, user("a", "", "one"), `{"type":"message","id":"b","timestamp":"t","message":{"role":"user","content":"rootless","timestamp":2}}`},
		"a parent in no line":        {h, user("a", "", "one"), user("b", "ghost", "orphan"), user("c", "b", "its child")},
		"an orphan, then the main":   {h, user("a", "", "one"), user("b", "ghost", "orphan"), user("d", "a", "two")},
		"an id used twice":           {h, user("a", "", "one"), user("b", "a", "first b"), user("b", "a", "second b")},
		"a label of a missing entry": {h, user("a", "", "one"), label("l", "a", "ghost"), user("b", "l", "after it")},
		// The last line is pi's leaf: the context is a's branch, not b's.
		"a label of a missing entry, last": {h, user("a", "", "one"), user("b", "a", "two"), label("l", "a", "ghost")},
	}
	dir := t.TempDir()
	var names []string
	var files []string
	for name, lines := range cases {
		p := filepath.Join(dir, filepath.Base(name)+".jsonl")
		if err := os.WriteFile(p, sessiontest.Lines(lines...), 0o600); err != nil {
			t.Fatal(err)
		}
		names, files = append(names, name), append(files, p)
	}
	// pi rewrites some files it opens: ours reads the same bytes first.
	ours := map[string]any{}
	for i, p := range files {
		data, _ := os.ReadFile(p)
		ld, err := codec.DecodeFile(data, p, codec.Lenient)
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		var branch []*session.Entry
		if leaf := ld.Tree.Leaf(); leaf != "" {
			if branch, err = ld.Tree.Branch(leaf); err != nil {
				t.Fatal(err)
			}
		}
		ours[names[i]] = contextJSON(t, branch)
	}
	script := filepath.Join(dir, "context.mjs")
	os.WriteFile(script, []byte(piContextScript), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{script, modules}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("pi printed %d contexts for %d files:\n%s", len(lines), len(files), out)
	}
	for i, name := range names {
		var theirs any
		if err := json.Unmarshal([]byte(lines[i]), &theirs); err != nil {
			t.Fatalf("%s: pi printed %q", name, lines[i])
		}
		if theirs == nil {
			theirs = []any{}
		}
		if ours[name] == nil {
			ours[name] = []any{}
		}
		if !reflect.DeepEqual(ours[name], theirs) {
			t.Errorf("%s: sessionlog -lenient gives\n%v\npi gives\n%v", name, ours[name], theirs)
		}
	}
}

// Files of pi 0.x (format versions 1 and 2) read as pi 1.6.0 reads them:
// a usage written without totalTokens (pi 0.x wrote none) stays without
// one in the context, and numbers keep their written form; stats derive
// the total from the parts and say so.
func TestOldPiFilesReadAsPiDoes(t *testing.T) {
	node, modules := piNode(t)
	asst := func(extra string) string {
		return `"message":{"role":"assistant","content":[{"type":"text","text":"done"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-3-5-sonnet","usage":{"input":1200,"output":80,"cacheRead":300,"cacheWrite":0,"cost":{"input":0.0036,"output":0.0012,"cacheRead":0.00009,"cacheWrite":0,"total":0.00489}},"stopReason":"stop","timestamp":1735689602000` + extra + `}`
	}
	files := map[string][]string{
		"v1": {`{"type":"session","id":"old-v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`,
			`{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"fix it","timestamp":1735689601000}}`,
			`{"type":"message","timestamp":"2025-01-01T00:00:02.000Z",` + asst("") + `}`,
			`{"type":"message","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"and the rate 1.0","timestamp":1735689603000,"weight":1.0}}`},
		"v2": {`{"type":"session","version":2,"id":"old-v2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`,
			`{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"fix it","timestamp":1735689601000}}`,
			`{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z",` + asst(`,"durationMs":12.50`) + `}`},
	}
	dir := t.TempDir()
	var names, paths []string
	ours := map[string]any{}
	for name, lines := range files {
		p := filepath.Join(dir, name+".jsonl")
		data := sessiontest.Lines(lines...)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		names, paths = append(names, name), append(paths, p)
		ld, err := codec.DecodeFile(data, p, codec.Strict)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		branch, err := ld.Tree.Branch(ld.Tree.Leaf())
		if err != nil {
			t.Fatal(err)
		}
		var msgs []json.RawMessage
		for _, m := range session.BuildContext(branch, session.ContextOptions{}).Messages {
			b, err := codec.EncodeMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "totalTokens") {
				t.Errorf("%s: a usage without totalTokens is given one: %s", name, b)
			}
			msgs = append(msgs, b)
		}
		b, _ := json.Marshal(msgs)
		var v any
		json.Unmarshal(b, &v)
		ours[name] = v
		if st := ld.Tree.Stats(); st.Usage.TotalTokens != 1580 || st.DerivedTotals != 1 {
			t.Errorf("%s: stats total %d (%d derived), want 1580 derived from the parts of 1", name, st.Usage.TotalTokens, st.DerivedTotals)
		}
		// Written out as version 3, the usage still has no total.
		h := ld.Tree.Header()
		out, err := codec.EncodeFile(&h, mustEntries(t, ld.Tree))
		if err != nil || strings.Contains(string(out), "totalTokens") || !strings.Contains(string(out), `"total":0.00489}`) {
			t.Errorf("%s written as version 3: %v\n%s", name, err, out)
		}
	}
	// The reader matrix's pi files (cmd/sessionlog/testdata/matrix): pi
	// 0.x's formats, and a later version's types, blocks and members.
	matrix, _ := filepath.Glob(filepath.Join("..", "cmd", "sessionlog", "testdata", "matrix", "pi-*.jsonl"))
	if len(matrix) != 3 {
		t.Fatalf("matrix pi files: %v", matrix)
	}
	for _, p := range matrix {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ld, err := codec.DecodeFile(data, p, codec.Strict)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		branch, err := ld.Tree.Branch(ld.Tree.Leaf())
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		ours[name] = contextJSON(t, branch)
		names, paths = append(names, name), append(paths, p)
	}
	script := filepath.Join(dir, "context.mjs")
	os.WriteFile(script, []byte(piContextScript), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{script, modules}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(paths) {
		t.Fatalf("pi printed %d contexts for %d files:\n%s", len(lines), len(paths), out)
	}
	for i, name := range names {
		var theirs any
		if err := json.Unmarshal([]byte(lines[i]), &theirs); err != nil {
			t.Fatalf("%s: pi printed %q", name, lines[i])
		}
		if !reflect.DeepEqual(ours[name], theirs) {
			t.Errorf("%s: sessionlog gives\n%v\npi 1.6.0 gives\n%v", name, ours[name], theirs)
		}
	}
}

// contextJSON is the context of a branch as pi's messages, decoded as
// JSON values (as the script prints pi's).
func contextJSON(t *testing.T, branch []*session.Entry) any {
	t.Helper()
	msgs := []json.RawMessage{}
	for _, m := range session.BuildContext(branch, session.ContextOptions{}).Messages {
		b, err := codec.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	b, _ := json.Marshal(msgs)
	var v any
	json.Unmarshal(b, &v)
	return v
}

func mustEntries(t *testing.T, tr *session.Tree) []*session.Entry {
	t.Helper()
	es, err := tr.Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}
