package follow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/follow"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

var ctx = context.Background()

const claudeFixture = "../transcript/testdata/claude-code/subagent.jsonl"
const codexFixture = "../transcript/testdata/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"

type rig struct {
	t     *testing.T
	repo  session.Repo
	dir   string
	state string
	log   *bytes.Buffer // the follower runs in the test's goroutine
}

func newRig(t *testing.T) *rig {
	repo, err := filestore.NewRepo(t.TempDir(), filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, repo: repo, dir: t.TempDir(), state: filepath.Join(t.TempDir(), "state.json"), log: &bytes.Buffer{}}
}

func (r *rig) follower() *follow.Follower {
	cfg := follow.DefaultConfig()
	cfg.Dirs, cfg.StatePath, cfg.Log, cfg.RescanEvery = []string{r.dir}, r.state, r.log, 1
	f, err := follow.New(cfg, r.repo)
	if err != nil {
		r.t.Fatal(err)
	}
	return f
}

func (r *rig) poll(f *follow.Follower) {
	if err := f.Poll(ctx); err != nil {
		r.t.Fatal(err)
	}
}

// entries are a session's entries as the repository holds them; f, when
// set, lets go of the sessions it holds (the file store locks a session
// to one writer) and takes them again on its next poll.
func (r *rig) entries(f *follow.Follower, id string) []*session.Entry {
	if f != nil {
		if err := f.Close(ctx); err != nil {
			r.t.Fatal(err)
		}
	}
	st, err := r.repo.Open(ctx, id)
	if err != nil {
		r.t.Fatalf("open %s: %v\nlog:\n%s", id, err, r.log)
	}
	defer st.Close(ctx)
	es, err := st.Entries(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return es
}

// imported is what an import of the whole file gives.
func imported(t *testing.T, format transcript.Format, path string, data []byte) *transcript.Decoded {
	d, err := transcript.Decode(format, data, transcript.SourceFor(format, path), codec.Strict)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sameEntries holds a followed session to the import of its file: the
// same entries, each the same JSON.
func sameEntries(t *testing.T, got, want []*session.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, the import has %d", len(got), len(want))
	}
	for i := range got {
		a, _ := codec.EncodeEntry(got[i])
		b, _ := codec.EncodeEntry(want[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("entry %d:\n got %.300s\nwant %.300s", i, a, b)
		}
	}
}

// A file written a piece at a time — pieces that end mid-line — and
// polled between pieces ends as its import: the same entries, and an
// export gives the file back.
func TestFollowOfAGrowingFileEndsEqualToItsImport(t *testing.T) {
	for _, tc := range []struct {
		fixture, name string
		format        transcript.Format
	}{
		{claudeFixture, "0f0f0f0f-1111-4222-8333-444455556666.jsonl", transcript.FormatClaudeCode},
		{codexFixture, filepath.Base(codexFixture), transcript.FormatCodex},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			r := newRig(t)
			data, err := os.ReadFile(tc.fixture)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(r.dir, "project", tc.name)
			os.MkdirAll(filepath.Dir(path), 0o700)
			w, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			f := r.follower()
			for off, step := 0, 1; off < len(data); step = step*3 + 7 {
				n := min(step*97, len(data)-off)
				w.Write(data[off : off+n])
				off += n
				r.poll(f)
			}
			r.poll(f)
			want := imported(t, tc.format, path, data)
			got := r.entries(f, want.Header.ID)
			sameEntries(t, got, want.Entries)
			back, _, err := transcript.Export(tc.format, got)
			if err != nil || !bytes.Equal(back, data) {
				t.Fatalf("export: %v (%d bytes against %d)", err, len(back), len(data))
			}
			if err := f.Close(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A follow started again resumes where it stopped (its state file), and
// one without its state appends nothing twice: lines are known by their
// entries' ids.
func TestFollowResumesWithoutDuplicates(t *testing.T) {
	r := newRig(t)
	data, _ := os.ReadFile(claudeFixture)
	path := filepath.Join(r.dir, "0f0f0f0f-1111-4222-8333-444455556666.jsonl")
	half := bytes.LastIndexByte(data[:len(data)/2], '\n') + 1
	os.WriteFile(path, data[:half], 0o600)
	f := r.follower()
	r.poll(f)
	f.Close(ctx)
	first := r.entries(nil, "0f0f0f0f-1111-4222-8333-444455556666")

	os.WriteFile(path, data, 0o600)
	f = r.follower() // resumes from the state file
	r.poll(f)
	f.Close(ctx)
	want := imported(t, transcript.FormatClaudeCode, path, data)
	sameEntries(t, r.entries(nil, want.Header.ID), want.Entries)
	if len(first) == 0 || len(first) >= len(want.Entries) {
		t.Fatalf("the first follow took %d of %d entries", len(first), len(want.Entries))
	}

	os.Remove(r.state) // a follow that remembers nothing
	f = r.follower()
	r.poll(f)
	f.Close(ctx)
	sameEntries(t, r.entries(nil, want.Header.ID), want.Entries)
}

// A file that shrinks, or whose start changes, is said to be so and read
// again; what its session holds already is not appended again, what is
// new is.
func TestFollowNoticesTruncatedAndRewrittenFiles(t *testing.T) {
	r := newRig(t)
	data, _ := os.ReadFile(claudeFixture)
	lines := bytes.SplitAfter(data, []byte("\n"))
	path := filepath.Join(r.dir, "0f0f0f0f-1111-4222-8333-444455556666.jsonl")
	os.WriteFile(path, data, 0o600)
	f := r.follower()
	r.poll(f)
	want := imported(t, transcript.FormatClaudeCode, path, data)

	os.WriteFile(path, bytes.Join(lines[:10], nil), 0o600)
	r.poll(f)
	if !strings.Contains(r.log.String(), "truncated") {
		t.Fatalf("no word of the truncation:\n%s", r.log)
	}
	sameEntries(t, r.entries(f, want.Header.ID), want.Entries)

	// Rewritten: the same length, a different first line (its first line
	// is a snapshot: its message id changed).
	changed := bytes.Replace(data, lines[0], bytes.Replace(lines[0], []byte(`"messageId":"`), []byte(`"messageId":"x`), 1), 1)
	changed = append(changed, []byte(`{"type":"queue-operation","operation":"enqueue","timestamp":"2026-02-12T17:00:00.000Z","sessionId":"0f0f0f0f-1111-4222-8333-444455556666"}`+"\n")...)
	os.WriteFile(path, changed, 0o600)
	r.poll(f)
	if !strings.Contains(r.log.String(), "rewritten") {
		t.Fatalf("no word of the rewrite:\n%s", r.log)
	}
	got := r.entries(f, want.Header.ID)
	if len(got) != len(want.Entries)+1 || got[len(got)-1].Custom() == nil {
		t.Fatalf("after the rewrite: %d entries, want %d and the new line", len(got), len(want.Entries)+1)
	}
	f.Close(ctx)
}

// pi's own files are followed too, and a file whose first line is still
// being written waits for it.
func TestFollowPiFiles(t *testing.T) {
	r := newRig(t)
	path := filepath.Join(r.dir, "--w--", "2025-01-01T00-00-00-000Z_pi-1.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o700)
	header := `{"type":"session","version":3,"id":"pi-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`
	e1 := `{"type":"message","id":"e1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`
	os.WriteFile(path, []byte(header[:20]), 0o600)
	f := r.follower()
	r.poll(f)
	os.WriteFile(path, []byte(header+"\n"+e1+"\n"), 0o600)
	r.poll(f)
	if got := r.entries(f, "pi-1"); len(got) != 1 || got[0].ID != "e1" {
		t.Fatalf("entries %v\nlog:\n%s", got, r.log)
	}
	f.Close(ctx)
}

// The state file is read in the form every release wrote (the bare map
// of files) and in the versioned one the next release will write; a
// version newer than this one reads is refused as such, not read as
// nothing to resume from.
func TestFollowStateVersions(t *testing.T) {
	r := newRig(t)
	data, _ := os.ReadFile(claudeFixture)
	path := filepath.Join(r.dir, "0f0f0f0f-1111-4222-8333-444455556666.jsonl")
	os.WriteFile(path, data, 0o600)
	f := r.follower()
	r.poll(f)
	f.Close(ctx)
	bare, err := os.ReadFile(r.state)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(bare), []byte(`{`)) || bytes.Contains(bare, []byte(`"version"`)) {
		t.Fatalf("state file written: %s (%v)", bare, err)
	}
	versioned := []byte(fmt.Sprintf(`{"version": %d, "files": %s}`, follow.StateVersion, bare))
	os.WriteFile(r.state, versioned, 0o600)
	f = r.follower()
	r.poll(f) // resumes: nothing appended twice
	f.Close(ctx)
	want := imported(t, transcript.FormatClaudeCode, path, data)
	sameEntries(t, r.entries(nil, want.Header.ID), want.Entries)

	os.WriteFile(r.state, []byte(fmt.Sprintf(`{"version": %d, "files": {}}`, follow.StateVersion+1)), 0o600)
	cfg := follow.DefaultConfig()
	cfg.Dirs, cfg.StatePath = []string{r.dir}, r.state
	if _, err := follow.New(cfg, r.repo); !errors.Is(err, session.ErrNewerFormat) {
		t.Fatalf("a newer state file: %v", err)
	}
}
