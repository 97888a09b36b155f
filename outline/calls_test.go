package outline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// A tool call is shown as its agent shows it: with what it acted on.
func TestCall(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"Read", `{"file_path":"/w/src/App.tsx","limit":20}`, "Read(/w/src/App.tsx)"},
		{"Bash", `{"command":"npm test","description":"run the tests"}`, "Bash(npm test)"},
		{"Grep", `{"pattern":"fn main","path":"src","output_mode":"content"}`, `Grep("fn main")`},
		{"Glob", `{"pattern":"**/*.ts"}`, `Glob("**/*.ts")`},
		{"WebFetch", `{"url":"https://example.com/a","prompt":"summarise"}`, "WebFetch(https://example.com/a)"},
		{"WebSearch", `{"query":"xterm scroll"}`, `WebSearch("xterm scroll")`},
		{"Task", `{"description":"Explore the code","prompt":"…","subagent_type":"Explore"}`, "Task(Explore the code)"},
		{"LS", `{"path":"/w"}`, "LS(/w)"},
		{"exec_command", `{"cmd":"sed -n 1,20p a.go","workdir":"/w"}`, "exec_command(sed -n 1,20p a.go)"},
		{"shell", `{"command":["bash","-lc","go test ./..."]}`, "shell(go test ./...)"},
		{"shell", `{"command":["ls","-la"]}`, "shell(ls -la)"},
		{"apply_patch", `{"input":"*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** Add File: b.go\n+z\n*** End Patch"}`, "apply_patch(a.go, b.go)"},
		{"TodoWrite", `{"todos":[{"content":"x"}]}`, "TodoWrite"},
		{"write_stdin", `{"session_id":48230,"chars":""}`, "write_stdin"},
		{"x", `not json`, "x"},
		{"x", `[1,2]`, "x"},
		{"x", ``, "x"},
		{"Bash", `{"command":""}`, "Bash"},
		{"Bash", "{\"command\":\"rm -rf /\\u001b[2J\\nFAKE ROW\\u202e\"}", "Bash(rm -rf /\uFFFD[2J FAKE ROW\uFFFD)"},
	} {
		if got := outline.Call(tc.name, session.Raw(tc.args)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
}

// Whatever the arguments, a call is one line of plain text, of bounded
// length.
func FuzzCall(f *testing.F) {
	for _, s := range []string{`{"file_path":"a"}`, `{"command":["bash","-lc","x"]}`, `{"input":"*** Update File: a\n"}`, "{\"pattern\":\"\\u202e\"}"} {
		f.Add("Read", s)
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		got := outline.Call(name, session.Raw(args))
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\x1b\u202e\u2066") || utf8.RuneCountInString(got) > 60+outline.CallRunes+2 {
			t.Fatalf("%q", got)
		}
	})
}

// RelativeTo shows the files under the session's directory as the agent
// did, and nothing else changes.
func TestRelativeTo(t *testing.T) {
	n := outline.Node{Calls: []string{"Read(/w/p/src/a.go)", "Read(/w/pother/b.go)", "Bash(cat /w/p/x)", "Read(/w/p/)", "Glob"}}
	n.RelativeTo("/w/p/")
	if got := strings.Join(n.Calls, " "); got != "Read(src/a.go) Read(/w/pother/b.go) Bash(cat /w/p/x) Read(/w/p/) Glob" {
		t.Fatalf("%s", got)
	}
}

// The lines Claude Code writes for one API message — text, thinking and
// tool calls, parallel ones among them — are one row, with every call and
// its result; the real session's parallel WebSearch and Glob are no branch.
func TestOneRowPerAPIMessage(t *testing.T) {
	file := filepath.Join("..", "transcript", "testdata", "claude-code", "tool_heavy.jsonl")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := transcript.Decode(transcript.FormatClaudeCode, data, transcript.SourceFor(transcript.FormatClaudeCode, file), codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	tr := session.NewTree(d.Header)
	for _, e := range d.Entries {
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	es, _ := tr.Entries()
	var nodes []outline.Node
	for _, e := range es {
		n := outline.FromEntry(e, "")
		n.RelativeTo(d.Header.Cwd)
		nodes = append(nodes, n)
	}
	o := outline.Build(nodes, tr.Leaf())
	checkRowOf(t, o, nodes)
	text := strings.Join(o.Lines(), "\n")
	for _, want := range []string{
		`[thought] → WebSearch("xterm.js scroll not working embedded page captures scroll events"), Glob("assets/js/**/*.js") (2 results)`,
		`→ Read(assets/js/app.js), WebFetch(https://github.com/xtermjs/xterm.js/issues/1343) (2 results)`,
		`→ Bash(mix phx.server) (1 result)`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if o.Branches != 0 {
		t.Errorf("%d branches: a message's parallel calls are one turn\n%s", o.Branches, text)
	}
}
