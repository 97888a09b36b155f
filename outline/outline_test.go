package outline_test

import (
	"fmt"
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

func msg(id, parent, role, text string, tools ...string) outline.Node {
	return outline.Node{ID: id, ParentID: parent, Type: "message", Role: role, Summary: text, Tools: tools}
}

func custom(id, parent, typ string) outline.Node {
	return outline.Node{ID: id, ParentID: parent, Type: "custom", CustomType: typ}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []outline.Node
		leaf     string
		want     []string // rows' text, indented
		branches int
	}{
		{
			name: "progress lines off each tool call fold, and the result pairs with its call",
			nodes: []outline.Node{
				msg("u", "", "user", "list files"),
				msg("a", "u", "assistant", "", "Bash"),
				custom("p1", "a", "claude-code/progress"), custom("p2", "p1", "claude-code/progress"),
				msg("r", "a", "toolResult", "a.go", "Bash"),
				msg("a2", "r", "assistant", "one file"),
			},
			leaf: "a2",
			want: []string{"u user: list files", "a assistant → Bash (1 result)  +2 (claude-code/progress 2)", "a2 assistant: one file  ← leaf"},
		},
		{
			name: "a real branch: two answers to one prompt",
			nodes: []outline.Node{
				msg("u", "", "user", "hi"), msg("a", "u", "assistant", "first"), msg("b", "u", "assistant", "second"),
				outline.Node{ID: "l", ParentID: "b", Type: "label", Summary: "x"},
			},
			leaf:     "b",
			want:     []string{"u user: hi", "  ├ a assistant: first", "  ├ b assistant: second  +1 (label 1)  ← leaf"},
			branches: 1,
		},
		{
			name: "bookkeeping before the first message folds into it; thinking, text and calls of one turn are one row",
			nodes: []outline.Node{
				custom("s", "", "codex/session_meta"), custom("t", "s", "codex/turn_context"),
				msg("u", "t", "user", "go"),
				{ID: "th", ParentID: "u", Type: "message", Role: "assistant", Thinking: true},
				msg("tx", "th", "assistant", "on it"), msg("tc", "tx", "assistant", "", "Read", "Grep"),
				msg("r1", "tc", "toolResult", "", "Read"), {ID: "r2", ParentID: "r1", Type: "message", Role: "toolResult", Tools: []string{"Grep"}, Error: true},
			},
			leaf: "r2",
			want: []string{"u user: go  +2 (codex/session_meta 1, codex/turn_context 1)", "th assistant: on it [thought] → Read, Grep (2 results, 1 failed)  ← leaf"},
		},
		{
			name:  "the leaf in a chain of bookkeeping is shown",
			nodes: []outline.Node{msg("u", "", "user", "x"), custom("c1", "u", "x/y"), custom("c2", "c1", "x/y")},
			leaf:  "c2",
			want:  []string{"u user: x  +2 (x/y 2)  ← leaf"},
		},
		{
			name:  "nothing but bookkeeping: the leaf's row, what came before counted",
			nodes: []outline.Node{custom("c1", "", "x"), custom("c2", "c1", "y"), {ID: "z", ParentID: "c2", Type: "x-future"}},
			leaf:  "z",
			want:  []string{"z x-future  +2 (x 1, y 1)  ← leaf"},
		},
		{
			name:  "an entry that names itself or a missing parent is a root",
			nodes: []outline.Node{msg("a", "a", "user", "self"), msg("b", "ghost", "user", "orphan")},
			leaf:  "b",
			want:  []string{"├ a user: self", "├ b user: orphan  ← leaf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := outline.Build(tt.nodes, tt.leaf)
			if got := strings.Join(o.Lines(), "\n"); got != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(tt.want, "\n"))
			}
			if o.Branches != tt.branches {
				t.Errorf("branches %d, want %d", o.Branches, tt.branches)
			}
			checkRowOf(t, o, tt.nodes)
		})
	}
}

// Whatever a session holds, a row is one line of printable text: escape
// codes, newlines, forged rows and bidirectional overrides in any field
// are replaced; long texts are cut.
func TestRowsAreOneLineOfPlainText(t *testing.T) {
	hostile := "a\x1b[2J\x1b]0;title\x07\nFAKE ROW ← leaf\r\u202etxt.exe\u2066\u200b" + strings.Repeat("w ", 400)
	nodes := []outline.Node{
		{ID: "u", Type: "message", Role: "user", Summary: outline.OneLine(hostile, outline.SummaryRunes), Label: hostile},
		{ID: "c", ParentID: "u", Type: "custom", CustomType: hostile},
		{ID: "t", ParentID: "c", Type: "message", Role: "assistant", Tools: []string{hostile}},
	}
	for _, line := range outline.Build(nodes, "t").Lines() {
		for _, r := range line {
			if r < 0x20 || r == 0x7f || r == '\u202e' || r == '\u2066' || r == '\u200b' {
				t.Fatalf("row holds %U: %q", r, line)
			}
		}
		if n := len([]rune(line)); n > 600 {
			t.Errorf("a row of %d runes", n)
		}
	}
}

// Visible keeps lines, tabs, emoji and scripts, and replaces what acts on
// a terminal or reorders text.
func TestVisible(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain\ttext\nnext line", "plain\ttext\nnext line"},
		{"👩\u200d💻 项目 héllo", "👩\u200d💻 项目 héllo"},
		{"red \x1b[31mx\x1b[0m", "red \uFFFD[31mx\uFFFD[0m"},
		{"title \x1b]0;t\x07 bell \a cr\rover", "title \uFFFD]0;t\uFFFD bell \uFFFD cr\uFFFDover"},
		{"C1 \u009b2J", "C1 \uFFFD2J"},
		{"\u202eevil\u202c \u2066x\u2069 \u200fy", "\uFFFDevil\uFFFD \uFFFDx\uFFFD \uFFFDy"},
		{"bad \xff utf-8", "bad \uFFFD utf-8"},
	} {
		if got := outline.Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A chain of 200,000 entries and a fan of 50,000 siblings outline without
// recursion.
func TestLargeAndDeep(t *testing.T) {
	var nodes []outline.Node
	for i := range 200_000 {
		p := ""
		if i > 0 {
			p = fmt.Sprint(i - 1)
		}
		if i%2 == 0 {
			nodes = append(nodes, msg(fmt.Sprint(i), p, "user", "x"))
		} else {
			nodes = append(nodes, custom(fmt.Sprint(i), p, "k"))
		}
	}
	for i := range 50_000 {
		nodes = append(nodes, msg(fmt.Sprintf("f%d", i), "0", "assistant", "y"))
	}
	o := outline.Build(nodes, "199999")
	if len(o.Rows) != 100_000+50_000 || o.Branches != 50_000 || o.Folded != 100_000 {
		t.Fatalf("rows %d, branches %d, folded %d", len(o.Rows), o.Branches, o.Folded)
	}
}

// A real Claude Code session (1,512 lines, a level deeper at every tool
// call as a tree of entries) outlines as its conversation: every prompt a
// row, no branch the conversation did not have, bookkeeping counted.
func TestClaudeCodeSessionOutline(t *testing.T) {
	file := filepath.Join("..", "transcript", "testdata", "claude-code", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
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
	users := map[string]bool{}
	for _, e := range es {
		l, _ := tr.Label(e.ID)
		nodes = append(nodes, outline.FromEntry(e, l))
		if e.Message != nil && e.Message.Role == session.RoleUser {
			users[e.ID] = true
		}
	}
	o := outline.Build(nodes, tr.Leaf())
	checkRowOf(t, o, nodes)
	text := strings.Join(o.Lines(), "\n")
	for _, r := range o.Rows {
		delete(users, r.Node.ID)
	}
	if len(users) > 0 {
		t.Errorf("%d user messages are in no row", len(users))
	}
	if o.Branches != 0 || len(o.Rows) > len(es)/5 || o.Folded < len(es)/2 || !strings.Contains(text, "← leaf") {
		t.Errorf("%d rows, %d branches, %d folded of %d entries, %d characters", len(o.Rows), o.Branches, o.Folded, len(es), len(text))
	}
	if strings.Contains(text, "claude-code/progress 0") || strings.Contains(text, " custom ") {
		t.Errorf("bookkeeping shown as rows:\n%s", text)
	}
}

// checkRowOf holds RowOf to the rows: every node is in one, a row's own
// entry in itself, and the rows' folded counts add up to the entries
// mapped to them that are not their own, paired or merged.
func checkRowOf(t *testing.T, o outline.Outline, nodes []outline.Node) {
	t.Helper()
	inRow := make([]int, len(o.Rows))
	for i, r := range o.RowOf {
		if r < 0 || r >= len(o.Rows) {
			t.Fatalf("node %s is in no row (%d)", nodes[i].ID, r)
		}
		inRow[r]++
	}
	for i := range nodes {
		for r, row := range o.Rows {
			if row.Node.ID == nodes[i].ID && o.RowOf[i] != r {
				t.Fatalf("row %d's own entry %s is mapped to row %d", r, nodes[i].ID, o.RowOf[i])
			}
		}
	}
	for r, row := range o.Rows {
		folded := 0
		for _, n := range row.Folded {
			folded += n
		}
		if inRow[r] < 1+folded+len(row.Results) {
			t.Fatalf("row %d (%s) holds %d entries, fewer than itself, %d folded and %d results", r, row.Node.ID, inRow[r], folded, len(row.Results))
		}
	}
}

// FuzzVisible: Visible's byte-at-a-time pass changes nothing of what it
// gives: every string comes out as the rune-at-a-time reading makes it.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"plain\ttext\nnext", "héllo 👩\u200d💻", "red \x1b[31mx", "del \x7f", "bad \xff", "\u202eevil", "\uFFFD ok", "\xe2\x80", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := s
		if !utf8.ValidString(s) || strings.ContainsFunc(s, outline.Hazard) {
			want = strings.Map(func(r rune) rune {
				if outline.Hazard(r) {
					return '\uFFFD'
				}
				return r
			}, strings.ToValidUTF8(s, "\uFFFD"))
		}
		if got := outline.Visible(s); got != want {
			t.Fatalf("Visible(%q) = %q, want %q", s, got, want)
		}
	})
}
