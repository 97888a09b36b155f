package filestore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

const header = `{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`

func user(id, parent string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi %s","timestamp":1}}`, id, p, id)
}

func file(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

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
	}{
		{
			name:     "clean",
			data:     file(header, user("a", ""), user("b", "a")),
			wantIDs:  []string{"a", "b"},
			wantLeaf: "b",
			strictOK: true,
		},
		{
			name:       "malformed line in the middle",
			data:       file(header, user("a", ""), `{"type":"message","id":"x",`, user("b", "a")),
			wantIssues: []issue{{3, filestore.ErrMalformedLine}},
			wantIDs:    []string{"a", "b"},
			wantLeaf:   "b",
		},
		{
			name:       "entry without id",
			data:       file(header, user("a", ""), `{"type":"message","parentId":"a","message":{"role":"user","content":"x"}}`),
			wantIssues: []issue{{3, filestore.ErrMalformedLine}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
		{
			name:       "torn last line is tolerated even when strict",
			data:       []byte(header + "\n" + user("a", "") + "\n" + `{"type":"message","id":"b","par`),
			wantIssues: []issue{{3, filestore.ErrTornWrite}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
			strictOK:   true,
		},
		{
			name:     "complete last line without newline",
			data:     []byte(header + "\n" + user("a", "")),
			wantIDs:  []string{"a"},
			wantLeaf: "a",
			strictOK: true,
		},
		{
			name:     "blank lines are ignored",
			data:     file(header, "", user("a", ""), "   ", user("b", "a")),
			wantIDs:  []string{"a", "b"},
			wantLeaf: "b",
			strictOK: true,
		},
		{
			name:       "duplicate id keeps the first",
			data:       file(header, user("a", ""), user("b", "a"), user("a", "b")),
			wantIssues: []issue{{4, session.ErrDuplicateID}},
			wantIDs:    []string{"a", "b"},
			wantLeaf:   "b",
		},
		{
			name:       "missing parent and its descendants",
			data:       file(header, user("a", ""), user("b", "ghost"), user("c", "b"), user("d", "a")),
			wantIssues: []issue{{3, session.ErrParentNotFound}, {4, session.ErrParentNotFound}},
			wantIDs:    []string{"a", "d"},
			wantLeaf:   "d",
		},
		{
			name:       "cycle",
			data:       file(header, user("a", ""), user("b", "c"), user("c", "b"), user("d", "c")),
			wantIssues: []issue{{3, session.ErrCycle}, {4, session.ErrCycle}, {5, session.ErrCycle}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
		{
			name:     "parent later in the file is fine",
			data:     file(header, user("b", "a"), user("a", "")),
			wantIDs:  []string{"a", "b"},
			wantLeaf: "a",
			strictOK: true,
		},
		{
			name:       "label of a missing entry",
			data:       file(header, user("a", ""), `{"type":"label","id":"l","parentId":"a","timestamp":"t","targetId":"ghost","label":"x"}`, user("b", "l")),
			wantIssues: []issue{{3, session.ErrEntryNotFound}, {4, session.ErrParentNotFound}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
		{
			name:       "message entry without a message",
			data:       file(header, user("a", ""), `{"type":"message","id":"m","parentId":"a","timestamp":"t","message":"oops"}`),
			wantIssues: []issue{{3, session.ErrInvalidEntry}},
			wantIDs:    []string{"a"},
			wantLeaf:   "a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ld, err := filestore.Load(tt.data, "f.jsonl", filestore.Lenient)
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

			_, err = filestore.Load(tt.data, "f.jsonl", filestore.Strict)
			if tt.strictOK && err != nil {
				t.Fatalf("strict load: %v", err)
			}
			if !tt.strictOK {
				var le *filestore.LoadError
				if !errors.As(err, &le) {
					t.Fatalf("strict load error = %v, want a *LoadError", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("f.jsonl:%d", tt.wantIssues[0].line)) {
					t.Errorf("strict error %q does not name f.jsonl:%d", err, tt.wantIssues[0].line)
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
		{"entry first", user("a", "") + "\n"},
		{"header without id", `{"type":"session","version":3}` + "\n"},
		{"garbage", "hello\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []filestore.Mode{filestore.Strict, filestore.Lenient} {
				_, err := filestore.Load([]byte(tt.data), "x.jsonl", mode)
				if !errors.Is(err, filestore.ErrBadHeader) {
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
	v1 := file(
		`{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"A"}],"provider":"p","model":"m","timestamp":2}}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:03.000Z","message":{"role":"user","content":"two","timestamp":3}}`,
		`{"type":"compaction","timestamp":"2024-01-01T00:00:04.000Z","summary":"S","firstKeptEntryIndex":3,"tokensBefore":9}`,
		`{"type":"message","timestamp":"2024-01-01T00:00:05.000Z","message":{"role":"hookMessage","customType":"h","content":"hook","display":true,"timestamp":5}}`,
	)
	ld, err := filestore.Load(v1, "v1.jsonl", filestore.Strict)
	if err != nil {
		t.Fatal(err)
	}
	if !ld.Migrated || ld.Version != 1 || ld.Tree.Header().Version != 3 {
		t.Fatalf("migrated=%v version=%d header version=%d", ld.Migrated, ld.Version, ld.Tree.Header().Version)
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
	if comp.FirstKeptEntryID != es[2].ID || len(comp.Extra) != 0 {
		t.Errorf("compaction keeps %q (extra %v), want %q", comp.FirstKeptEntryID, comp.Extra, es[2].ID)
	}
	if es[4].Message.Role != session.RoleCustom {
		t.Errorf("hookMessage became %q, want custom", es[4].Message.Role)
	}
	again, err := filestore.Load(v1, "v1.jsonl", filestore.Strict)
	if err != nil {
		t.Fatal(err)
	}
	if sessiontest.Entries(t, again.Tree)[2].ID != es[2].ID {
		t.Error("migrated ids differ between two loads of the same file")
	}
	c := session.BuildContext(mustBranch(t, ld.Tree), session.ContextOptions{})
	var got []string
	for _, m := range c.Messages {
		got = append(got, m.Role+":"+m.Text()+m.Summary)
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
