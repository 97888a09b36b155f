package follow_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/follow"
	"github.com/agentcore/sessionlog/transcript"
)

const piHeader = `{"type":"session","version":3,"id":"%s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`

func piLine(id, parent string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`
}

// A folder someone else can write to: a FIFO named like a session, a link
// to a file outside, a file that is no session. The follow opens none of
// them (a FIFO would hold it in open for good, deaf to signals), says so
// once, and follows the real sessions beside them; a link within the
// folder is followed.
func TestFollowPassesOverWhatIsNoSessionFile(t *testing.T) {
	r := newRig(t)
	if err := syscall.Mkfifo(filepath.Join(r.dir, "trap.jsonl"), 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	os.WriteFile(outside, []byte(strings.ReplaceAll(piHeader, "%s", "secret")+"\n"+piLine("s1", "")+"\n"), 0o600)
	os.Symlink(outside, filepath.Join(r.dir, "link-out.jsonl"))
	real := filepath.Join(r.dir, "real.jsonl")
	os.WriteFile(real, []byte(strings.ReplaceAll(piHeader, "%s", "real")+"\n"+piLine("r1", "")+"\n"), 0o600)
	os.Symlink(real, filepath.Join(r.dir, "link-in.jsonl"))
	os.WriteFile(filepath.Join(r.dir, "notes.jsonl"), []byte("just some notes\nmore\n"), 0o600)

	f := r.follower()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 { // four seconds of polls at the default interval
			r.poll(f)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the follow hangs (in the FIFO's open?)")
	}
	if got := r.entries(f, "real"); len(got) != 1 {
		t.Fatalf("real: %d entries", len(got))
	}
	if _, err := r.repo.Open(ctx, "secret"); err == nil {
		t.Fatal("a link out of the folder brought its file into the store")
	}
	log := r.log.String()
	for _, want := range []string{"trap.jsonl: passed over", "link-out.jsonl: passed over"} {
		if strings.Count(log, want) != 1 {
			t.Errorf("%q said %d times, want once:\n%s", want, strings.Count(log, want), log)
		}
	}
	if n := strings.Count(log, "notes.jsonl"); n != 1 {
		t.Errorf("a file of no known format was reported %d times in 20 polls, want once:\n%s", n, log)
	}
	f.Close(ctx)

	// Asked to, the follow takes links out of the folder too.
	cfg := follow.DefaultConfig()
	cfg.Dirs, cfg.Log, cfg.FollowLinks = []string{r.dir}, &bytes.Buffer{}, true
	fl, err := follow.New(cfg, r.repo)
	if err != nil {
		t.Fatal(err)
	}
	r.poll(fl)
	if got := r.entries(fl, "secret"); len(got) != 1 {
		t.Fatalf("with FollowLinks the linked session has %d entries", len(got))
	}
}

// A line longer than the longest line an import takes is said once and
// skipped, and the lines after it are taken in — as it is written, and
// by a follow that starts again; a file that begins with a UTF-8 BOM
// loses nothing, and imports the same.
func TestFollowSkipsALineTooLongAndReadsPastIt(t *testing.T) {
	r := newRig(t)
	path := filepath.Join(r.dir, "long.jsonl")
	head := "\xef\xbb\xbf" + strings.ReplaceAll(piHeader, "%s", "long") + "\n" + piLine("a1", "") + "\n"
	os.WriteFile(path, []byte(head), 0o600)
	f := r.follower()
	r.poll(f)
	w, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	defer w.Close()
	// The long line, written over several polls.
	chunk := bytes.Repeat([]byte("x"), 8<<20)
	w.WriteString(`{"type":"message","id":"huge","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"`)
	for range codec.MaxLineBytes/len(chunk) + 1 {
		w.Write(chunk)
		r.poll(f)
	}
	w.WriteString("\"}}\n" + piLine("a2", "a1") + "\n")
	r.poll(f)
	r.poll(f)
	got := r.entries(f, "long")
	if len(got) != 2 || got[0].ID != "a1" || got[1].ID != "a2" {
		t.Fatalf("entries %d (want a1, a2)\nlog:\n%s", len(got), r.log)
	}
	if n := strings.Count(r.log.String(), "a line longer than"); n != 1 {
		t.Fatalf("the long line was reported %d times:\n%s", n, r.log)
	}
	// Started again without its state, a follow reads the same.
	w.WriteString(piLine("a3", "a2") + "\n")
	f.Close(ctx)
	os.Remove(r.state)
	f = r.follower()
	for range 3 { // the lines before, the long one passed over, the rest
		r.poll(f)
	}
	if got := r.entries(f, "long"); len(got) != 3 || got[2].ID != "a3" {
		t.Fatalf("a follow started again: %d entries\nlog:\n%s", len(got), r.log)
	}
	f.Close(ctx)
	// The same file's import (BOM and all) refuses only the long line.
	data, _ := os.ReadFile(path)
	ld, err := codec.DecodeFile(transcript.TrimBOM(data), path, codec.Lenient)
	if err != nil || ld.Tree.Len() != 3 {
		t.Fatalf("import of the followed file: %v", err)
	}
}

// A file with more entry types unknown to sessionlog than a session may
// hold (session.MaxUnknownTypes) is followed up to the bound: the entries
// past it are said and left out, the lines after them taken in.
func TestFollowHoldsAFileToTheUnknownTypesBound(t *testing.T) {
	r := newRig(t)
	path := filepath.Join(r.dir, "types.jsonl")
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(piHeader, "%s", "types") + "\n")
	parent := "null"
	for i := range 40 {
		id := "t" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		b.WriteString(`{"type":"x-kind-` + itoa(i) + `","id":"` + id + `","parentId":` + parent + `,"timestamp":"2025-01-01T00:00:01.000Z"}` + "\n")
		parent = `"` + id + `"`
	}
	b.WriteString(piLine("last", "t031") + "\n")
	os.WriteFile(path, []byte(b.String()), 0o600)
	f := r.follower()
	r.poll(f)
	r.poll(f)
	got := r.entries(f, "types")
	if len(got) != 33 || got[32].ID != "last" {
		t.Fatalf("%d entries (want the 32 types and the last line)\nlog:\n%s", len(got), r.log)
	}
	if n := strings.Count(r.log.String(), "skipped"); n != 8 {
		t.Fatalf("%d entries said skipped, want 8:\n%s", n, r.log)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
