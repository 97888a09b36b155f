package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

type issue struct {
	line int
	err  error
}

func TestLoadBadInput(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		// wantIssues are the lines a load reports, with their cause.
		wantIssues []issue
		// wantIDs are the entries a lenient load keeps, and wantLeaf its leaf.
		wantIDs  []string
		wantLeaf string
		// strictOK: a strict load succeeds (only a torn tail, or nothing, is wrong).
		strictOK bool
		// strictLine is the first line Strict reports, when not the first
		// issue's; strictHeader, that Strict refuses the header.
		strictLine   int
		strictHeader bool
	}{
		{
			name:     "clean",
			data:     sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), sessiontest.UserLine("b", "a")),
			wantIDs:  []string{"a", "b"},
			wantLeaf: "b",
			strictOK: true,
		},
		{
			name:       "malformed line in the middle",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"message","id":"x",`, sessiontest.UserLine("b", "a")),
			wantIssues: []issue{{3, codec.ErrMalformedLine}},
			wantIDs:    []string{"a", "b"},
			wantLeaf:   "b",
		},
		{
			name:       "entry without id",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"message","parentId":"a","message":{"role":"user","content":"x"}}`),
			wantIssues: []issue{{3, codec.ErrMalformedLine}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
		{
			name:       "torn last line is tolerated even when strict",
			data:       []byte(sessiontest.HeaderLine + "\n" + sessiontest.UserLine("a", "") + "\n" + `{"type":"message","id":"b","par`),
			wantIssues: []issue{{3, codec.ErrTornWrite}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
			strictOK:   true,
		},
		{
			name:     "complete last line without newline",
			data:     []byte(sessiontest.HeaderLine + "\n" + sessiontest.UserLine("a", "")),
			wantIDs:  []string{"a"},
			wantLeaf: "a",
			strictOK: true,
		},
		{
			name:     "blank lines are ignored",
			data:     sessiontest.Lines(sessiontest.HeaderLine, "", sessiontest.UserLine("a", ""), "   ", sessiontest.UserLine("b", "a")),
			wantIDs:  []string{"a", "b"},
			wantLeaf: "b",
			strictOK: true,
		},
		{
			// pi's index keeps the last of entries sharing an id.
			name:       "duplicate id keeps the last",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), sessiontest.UserLine("b", "a"), sessiontest.UserLine("b", "a")),
			wantIssues: []issue{{3, session.ErrDuplicateID}},
			wantIDs:    []string{"a", "b"},
			wantLeaf:   "b",
			strictLine: 4, // strict reports the second use
		},
		{
			// The last a makes a cycle with b (pi's loader never returns
			// on this file): both are reported, nothing of them kept.
			name:       "duplicate id whose last makes a cycle",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), sessiontest.UserLine("b", "a"), sessiontest.UserLine("a", "b")),
			wantIssues: []issue{{2, session.ErrDuplicateID}, {3, session.ErrCycle}, {4, session.ErrCycle}},
			wantIDs:    nil,
			wantLeaf:   "",
			strictLine: 4,
		},
		{
			// pi keeps an entry whose parent is in no line, as a root.
			name:       "missing parent: kept as a root",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), sessiontest.UserLine("b", "ghost"), sessiontest.UserLine("c", "b"), sessiontest.UserLine("d", "a")),
			wantIssues: []issue{{3, session.ErrParentNotFound}},
			wantIDs:    []string{"a", "b", "c", "d"},
			wantLeaf:   "d",
		},
		{
			name:       "no parentId: kept as a root",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"message","id":"m","timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}`),
			wantIssues: []issue{{3, codec.ErrMalformedLine}},
			wantIDs:    []string{"a", "m"},
			wantLeaf:   "m",
		},
		{
			name:         "lines that are not JSON before the header",
			data:         sessiontest.Lines("garbage", "{not json", sessiontest.HeaderLine, sessiontest.UserLine("a", "")),
			wantIssues:   []issue{{1, codec.ErrMalformedLine}, {2, codec.ErrMalformedLine}},
			wantIDs:      []string{"a"},
			wantLeaf:     "a",
			strictHeader: true, // strict wants the header first
		},
		{
			name:       "cycle",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), sessiontest.UserLine("b", "c"), sessiontest.UserLine("c", "b"), sessiontest.UserLine("d", "c")),
			wantIssues: []issue{{3, session.ErrCycle}, {4, session.ErrCycle}, {5, session.ErrCycle}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
		{
			name:     "parent later in the file is fine",
			data:     sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("b", "a"), sessiontest.UserLine("a", "")),
			wantIDs:  []string{"a", "b"},
			wantLeaf: "a",
			strictOK: true,
		},
		{
			name:       "label of a missing entry",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"label","id":"l","parentId":"a","timestamp":"t","targetId":"ghost","label":"x"}`, sessiontest.UserLine("b", "l")),
			wantIssues: []issue{{3, codec.ErrMalformedLine}},
			wantIDs:    []string{"a", "b", "l"},
			wantLeaf:   "b",
			strictOK:   true, // kept by both modes, as pi keeps it; said in lenient
		},
		{
			// As the last line it is the leaf, as in pi.
			name:       "label of a missing entry, last",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"label","id":"l","parentId":"a","timestamp":"t","targetId":"ghost","label":"x"}`),
			wantIssues: []issue{{3, codec.ErrMalformedLine}},
			wantIDs:    []string{"a", "l"},
			wantLeaf:   "l",
			strictOK:   true,
		},
		{
			name:     "label of an entry on a later line",
			data:     sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"label","id":"l","parentId":"a","timestamp":"t","targetId":"b","label":"x"}`, sessiontest.UserLine("b", "l")),
			wantIDs:  []string{"a", "b", "l"},
			wantLeaf: "b",
			strictOK: true,
		},
		{
			name:       "message entry without a message",
			data:       sessiontest.Lines(sessiontest.HeaderLine, sessiontest.UserLine("a", ""), `{"type":"message","id":"m","parentId":"a","timestamp":"t","message":"oops"}`),
			wantIssues: []issue{{3, session.ErrInvalidEntry}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ld, err := codec.DecodeFile(tt.data, "f.jsonl", codec.Lenient)
			if err != nil {
				t.Fatalf("lenient load: %v", err)
			}
			var got []issue
			for _, is := range ld.Issues {
				if is.File != "f.jsonl" {
					t.Errorf("issue names file %q", is.File)
				}
				got = append(got, issue{is.Line, is.Err})
			}
			if len(got) != len(tt.wantIssues) {
				t.Fatalf("issues = %v, want %v", ld.Issues, tt.wantIssues)
			}
			for i, w := range tt.wantIssues {
				if got[i].line != w.line || !errors.Is(ld.Issues[i], w.err) {
					t.Errorf("issue %d = %v, want line %d: %v", i, ld.Issues[i], w.line, w.err)
				}
			}
			var ids []string
			for _, e := range sessiontest.Entries(t, ld.Tree) {
				ids = append(ids, e.ID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("entries = %v, want %v", ids, tt.wantIDs)
			}
			if ld.Tree.Leaf() != tt.wantLeaf {
				t.Errorf("leaf = %q, want %q", ld.Tree.Leaf(), tt.wantLeaf)
			}

			_, err = codec.DecodeFile(tt.data, "f.jsonl", codec.Strict)
			if tt.strictOK && err != nil {
				t.Fatalf("strict load: %v", err)
			}
			if tt.strictHeader {
				if !errors.Is(err, codec.ErrBadHeader) {
					t.Fatalf("strict load error = %v, want ErrBadHeader", err)
				}
				return
			}
			if !tt.strictOK {
				line := tt.wantIssues[0].line
				if tt.strictLine != 0 {
					line = tt.strictLine
				}
				var le *codec.FileError
				if !errors.As(err, &le) {
					t.Fatalf("strict load error = %v, want a *LoadError", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("f.jsonl:%d", line)) {
					t.Errorf("strict error %q does not name f.jsonl:%d", err, line)
				}
				if !errors.Is(err, tt.wantIssues[0].err) {
					t.Errorf("strict error %v is not %v", err, tt.wantIssues[0].err)
				}
			}
		})
	}
}

func TestLoadRefusesWhatIsNotASession(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"only blank lines", "\n  \n"},
		{"entry first", sessiontest.UserLine("a", "") + "\n"},
		{"sessiontest.HeaderLine without id", `{"type":"session","version":3}` + "\n"},
		{"garbage", "hello\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []codec.Mode{codec.Strict, codec.Lenient} {
				_, err := codec.DecodeFile([]byte(tt.data), "x.jsonl", mode)
				if !errors.Is(err, codec.ErrBadHeader) {
					t.Fatalf("%v load error = %v, want ErrBadHeader", mode, err)
				}
				if !strings.Contains(err.Error(), "x.jsonl:") {
					t.Errorf("error %q does not name the file", err)
				}
			}
		})
	}
}

func TestMigrateOldVersions(t *testing.T) {
	v1 := sessiontest.Lines(
		`{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"A"}],"provider":"p","model":"m","timestamp":2}}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:03.000Z","message":{"role":"user","content":"two","timestamp":3}}`,
		`{"type":"compaction","timestamp":"2024-01-01T00:00:04.000Z","summary":"S","firstKeptEntryIndex":3,"tokensBefore":9}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:05.000Z","message":{"role":"hookMessage","customType":"h","content":"hook","display":true,"timestamp":5}}`,
	)
	ld, err := codec.DecodeFile(v1, "v1.jsonl", codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	if !ld.Migrated || ld.Version != 1 || ld.Tree.Header().Version != 3 {
		t.Fatalf("migrated=%v version=%d sessiontest.HeaderLine version=%d", ld.Migrated, ld.Version, ld.Tree.Header().Version)
	}
	es := sessiontest.Entries(t, ld.Tree)
	if len(es) != 5 {
		t.Fatalf("%d entries", len(es))
	}
	for i, e := range es {
		want := ""
		if i > 0 {
			want = es[i-1].ID
		}
		if e.ID == "" || e.ParentID != want {
			t.Errorf("entry %d: id %q parent %q, want a chain", i, e.ID, e.ParentID)
		}
	}
	comp := es[3]
	if comp.Compaction().FirstKeptEntryID != es[2].ID || len(comp.Extra) != 0 {
		t.Errorf("compaction keeps %q (extra %v), want %q", comp.Compaction().FirstKeptEntryID, comp.Extra, es[2].ID)
	}
	if es[4].Message.Role != session.RoleCustom {
		t.Errorf("hookMessage became %q, want custom", es[4].Message.Role)
	}
	again, err := codec.DecodeFile(v1, "v1.jsonl", codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	if sessiontest.Entries(t, again.Tree)[2].ID != es[2].ID {
		t.Error("migrated ids differ between two loads of the same file")
	}
	c := session.BuildContext(mustBranch(t, ld.Tree), session.ContextOptions{})
	var got []string
	for _, m := range c.Messages {
		summary := ""
		if s := m.Summary(); s != nil {
			summary = s.Summary
		}
		got = append(got, m.Role+":"+m.Text()+summary)
	}
	want := []string{"compactionSummary:S", "user:two", "custom:hook"}
	if !slices.Equal(got, want) {
		t.Errorf("context = %q, want %q", got, want)
	}
}

func mustBranch(t *testing.T, tr *session.Tree) []*session.Entry {
	t.Helper()
	b, err := tr.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A line over the bound is reported, not decoded: decoding costs several
// times its size.
func TestLongLinesAreNotDecoded(t *testing.T) {
	defer codec.SetMaxLineBytes(1 << 10)()
	short := `{"type":"custom","customType":"x","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z"}`
	long := `{"type":"custom","customType":"x","data":"` + strings.Repeat("y", 4<<10) + `","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z"}`
	data := sessiontest.Lines(sessiontest.HeaderLine, short, long)
	ld, err := codec.DecodeFile(data, "long.jsonl", codec.Lenient)
	if err != nil {
		t.Fatal(err)
	}
	if ld.Tree.Len() != 1 || len(ld.Issues) != 1 || !errors.Is(ld.Issues[0].Err, codec.ErrLineTooLong) || ld.Issues[0].Line != 3 {
		t.Fatalf("decoded %d entries, issues %v", ld.Tree.Len(), ld.Issues)
	}
	if _, err := codec.DecodeFile(data, "long.jsonl", codec.Strict); !errors.Is(err, codec.ErrLineTooLong) {
		t.Fatalf("a strict decode of a file with a line too long: %v", err)
	}
}

// TestSharedData: with WithSharedData the entries' text is the data's own
// bytes (a change to them shows), without it a copy (a change does not).
func TestSharedData(t *testing.T) {
	file := sessiontest.HeaderLine + "\n" + sessiontest.UserLine("a", "") + "\n"
	for _, shared := range []bool{false, true} {
		data := []byte(file)
		opts := []codec.FileOption{}
		if shared {
			opts = append(opts, codec.WithSharedData())
		}
		ld, err := codec.DecodeFile(data, "shared", codec.Strict, opts...)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := ld.Tree.Get("a")
		before := strings.Clone(e.Message.Content.Paragraphs())
		at := bytes.Index(data, []byte(before))
		if before == "" || at < 0 {
			t.Fatalf("the user's text %q is not in the line", before)
		}
		data[at] ^= 0x20 // the caller changes its buffer
		changed := e.Message.Content.Paragraphs() != before
		if changed != shared {
			t.Fatalf("shared %v: the text changed with the buffer: %v", shared, changed)
		}
	}
}

// A member read before the member that names its object's kind is held and
// read again once the kind is known: its strings' escapes are decoded then
// too (the service's fuzz found them kept as written, in content sent
// before role).
func TestHeldMembersDecodeEscapes(t *testing.T) {
	for _, line := range []string{
		`{"message":{"content":[{"text":"a\\b \"q\" \u2028 tab\there","type":"text"}],"role":"user","timestamp":1},"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}`,
		`{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"content":"a\\b \"q\" \u2028 tab\there","role":"user","timestamp":1}}`,
	} {
		for _, decode := range []func([]byte) (*session.Entry, error){codec.DecodeEntry, codec.DecodeEntryStrict} {
			e, err := decode([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := e.Message.Content.Paragraphs(), "a\\b \"q\" \u2028 tab\there"; got != want {
				t.Fatalf("%s: text %q, want %q", line, got, want)
			}
		}
	}
}
