package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A source of the matrix: a session as one agent or adapter wrote it.
type matrixSource struct {
	name string // what it is
	id   string // its session id in the store
	// file is the file it was imported from; format the format whose
	// export gives that file back byte for byte ("": none does, as for
	// a pi 0.x file, which comes back as version 3).
	file, format string
	pi           *sessiontest.PiExpected // what pi 1.6.0 or 0.73 read of it
	entries      string                  // lines appended with append -entry
	// word is a word search finds in it ("": the longest of its first
	// message; "-": none, it holds no text search indexes).
	word string
}

// matrixSources lays the sources out under dir as their agents keep
// them, and says what each is.
func matrixSources(t *testing.T, dir string) []matrixSource {
	t.Helper()
	var out []matrixSource
	put := func(rel string, data []byte) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, s := range sessiontest.PiSamples(t) {
		exp := s.Expected
		out = append(out, matrixSource{name: "pi " + s.Name, id: exp.Header["id"].(string), file: put("pi/"+s.Name, s.Data), format: "pi", pi: &exp})
	}
	for _, n := range []string{"pi-v1", "pi-v2", "pi-unknown"} {
		src := matrixSource{name: n, id: "matrix-" + n, file: put("pi/"+n+".jsonl", read("testdata/matrix/"+n+".jsonl"))}
		if n == "pi-unknown" {
			src.format = "pi"
		}
		out = append(out, src)
	}
	for n, word := range map[string]string{"langgraph": "-", "openai": "echidna"} {
		out = append(out, matrixSource{name: n + " adapter", id: "matrix-" + n, entries: string(read("testdata/matrix/" + n + ".entries.jsonl")), word: word})
	}
	cc := filepath.Join("..", "..", "transcript", "testdata", "claude-code")
	const main = "4d5611e5-241a-462a-8d15-5122611a9569"
	for id, rel := range map[string]string{
		main:                            main + ".jsonl",
		main + "_agent-a2898e3":         main + "/subagents/agent-a2898e3.jsonl",
		main + "_agent-acompact-e1f845": main + "/subagents/agent-acompact-e1f845.jsonl",
		"short":                         "short.jsonl",
		"tool_heavy":                    "tool_heavy.jsonl",
		"subagent":                      "subagent.jsonl",
	} {
		out = append(out, matrixSource{name: "claude-code " + rel, id: id, file: put("claude/project/"+rel, read(filepath.Join(cc, rel))), format: "claude-code"})
	}
	cx := filepath.Join("..", "..", "transcript", "testdata", "codex")
	for id, rel := range map[string]string{
		"019e1625-789d-76c0-80ab-3724b5ddb799": "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
		"019b64e5-57fa-7463-b644-fba7e456f905": "sample_codex_session.jsonl",
		"codex-numbers":                        "numbers.jsonl", // the same rollout id as the sample
	} {
		out = append(out, matrixSource{name: "codex " + rel, id: id, file: put("codex/"+rel, read(filepath.Join(cx, rel))), format: "codex"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// storeSources puts every source into the store on data as a user would:
// import of the folders, append -entry for the adapters' sessions.
func storeSources(t *testing.T, data string, dir string, sources []matrixSource) {
	t.Helper()
	mustRun(t, data, "", "import", filepath.Join(dir, "pi"), filepath.Join(dir, "claude"))
	for _, s := range sources {
		switch {
		case s.entries != "":
			mustRun(t, data, "", "new", "-id", s.id)
			mustRun(t, data, s.entries, "append", s.id, "-entry")
		case strings.Contains(s.file, "/codex/"):
			mustRun(t, data, "", "import", "-id", s.id, s.file)
		}
	}
}

// pairs counts what the matrix checked: reader → sources it read.
type pairs struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

func (p *pairs) done(reader, source string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]map[string]bool{}
	}
	if p.m[reader] == nil {
		p.m[reader] = map[string]bool{}
	}
	p.m[reader][source] = true
}

func (p *pairs) report(t *testing.T, sources int) {
	n := 0
	var readers []string
	for r, s := range p.m {
		n += len(s)
		readers = append(readers, r)
		if len(s) != sources {
			t.Errorf("reader %s read %d of the %d sources", r, len(s), sources)
		}
	}
	sort.Strings(readers)
	t.Logf("matrix: %d sources × %d readers = %d pairs checked (%s)", sources, len(readers), n, strings.Join(readers, ", "))
}

// terminalSafe fails when text a verb prints for a terminal holds a
// control character (an escape code) or a bidirectional control that
// came from a session.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) {
			t.Errorf("%s prints %U at byte %d: %q", what, r, i, out[max(0, i-40):min(len(out), i+40)])
			return
		}
	}
}

// checkContext checks the context a verb printed: messages pi's codec
// reads, and for a pi file the messages pi itself built from it.
func checkContext(t *testing.T, s matrixSource, out string) {
	t.Helper()
	var c struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("context is no JSON: %v", err)
	}
	if s.pi != nil && len(c.Messages) != s.pi.Context.MessageCount {
		t.Errorf("context has %d messages; pi %s read %d", len(c.Messages), s.pi.Header["version"], s.pi.Context.MessageCount)
	}
	for i, raw := range c.Messages {
		m, err := codec.DecodeMessage(raw)
		if err != nil {
			t.Fatalf("context message %d: %v", i, err)
		}
		if s.pi == nil || i >= len(s.pi.Context.Messages) {
			continue
		}
		d, _ := codec.MessageDigest(m)
		if w := s.pi.Context.Messages[i]; m.Role != w.Role || d != w.Digest {
			t.Errorf("context message %d is %s %.8s; pi read %s %.8s", i, m.Role, d, w.Role, w.Digest)
		}
	}
}
