package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// release is a release of CHANGELOG.md: its version and the commit it
// was built from.
type release struct{ version, commit string }

// previousRelease is the newest release CHANGELOG.md names: what a
// deployment of this code upgrades from and rolls back to.
func previousRelease(t *testing.T) release {
	t.Helper()
	f, err := os.Open("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile(`^## (v\d+\.\d+\.\d+)\b`)
	commit := regexp.MustCompile(`^Commit: ([0-9a-f]{40})$`)
	var r release
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if m := heading.FindStringSubmatch(sc.Text()); m != nil && r.version == "" {
			r.version = m[1]
		} else if m := commit.FindStringSubmatch(sc.Text()); m != nil && r.version != "" {
			r.commit = m[1]
			return r
		}
	}
	t.Fatal("CHANGELOG.md names no release with its commit")
	return r
}

// buildRelease builds the binary of release r from the repository's own
// history, in a worktree of its commit, and returns its path.
func buildRelease(t *testing.T, r release) string {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the previous release cannot be built from the history")
	}
	if _, err := git("cat-file", "-e", r.commit+"^{commit}"); err != nil {
		if shallow, _ := git("rev-parse", "--is-shallow-repository"); shallow == "true" {
			t.Skipf("a shallow clone without %s's commit %s: fetch the history (git fetch --unshallow) to test the upgrade from it", r.version, r.commit)
		}
		t.Fatalf("the commit of %s, %s, is not in this repository's history: %v", r.version, r.commit, err)
	}
	dir := filepath.Join(t.TempDir(), "src")
	if out, err := git("worktree", "add", "--detach", dir, r.commit); err != nil {
		t.Fatalf("git worktree add: %v\n%s", err, out)
	}
	t.Cleanup(func() { git("worktree", "remove", "--force", dir) })
	out := filepath.Join(t.TempDir(), "sessionlog-"+r.version)
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+r.version+" -X main.commit="+r.commit, "-o", out, "./cmd/sessionlog")
	build.Dir = dir
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", r.version, err, b)
	}
	return out
}

// TestRollingUpgradeAndRollback starts three nodes of the previous
// release under writers and linearizability clients, replaces them one by
// one with this build, then rolls one back: at every step every session
// reads the same through either version's binary, and at the end nothing
// acknowledged is lost or stored twice, the history is linearizable, a
// backup the previous release took restores into this one, and no
// snapshot object is left that no head names.
func TestRollingUpgradeAndRollback(t *testing.T) {
	prev := previousRelease(t)
	built := time.Now()
	old := buildRelease(t, prev)
	t.Logf("%s built from its commit in %v", prev.version, time.Since(built).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute+*soak)
	defer cancel()
	c := startCluster(t, old, 3)
	sessions := sessionIDs(8)
	createSessions(t, ctx, c.urls(), sessions)
	w := startWorkload(t, c.urls(), 2, sessions)
	stopped := false
	defer func() {
		if !stopped {
			w.stop()
		}
	}()
	lin := startLinWorkload(t, strings.Split(c.urls(), ","), []string{"itest-lin-0", "itest-lin-1"})
	// Content large enough to be a blob, written by each version (in the
	// ledger like every other append): the GC at the end must find only
	// these blobs, and each export must give their content back.
	createSessions(t, ctx, c.urls(), []string{"itest-blobs"})
	appendLarge := func(b, id string) {
		t.Helper()
		entry, _ := json.Marshal(map[string]any{"type": "message", "id": id, "message": map[string]any{
			"role": "user", "content": id + strings.Repeat(" the content of a large tool output", 6000), "timestamp": time.Now().UnixMilli()}})
		cmd := exec.CommandContext(ctx, b, "append", "-url", c.urls(), "-entry", "itest-blobs")
		cmd.Stdin = bytes.NewReader(entry)
		w.l.attempt(id, "itest-blobs")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s append: %v\n%s", filepath.Base(b), err, out)
		}
		w.l.ack(id, "itest-blobs")
	}
	appendLarge(old, "large-"+prev.version)
	// Sessions that stop growing, imported by the previous release from
	// every shape it takes in: files pi 1.6 wrote, a Claude Code
	// transcript, a Codex rollout with numbers kept as written. Both
	// versions must export each the same, byte for byte, at every step.
	var static []string
	for i, f := range []string{"../session/sessiontest/testdata/pi16/pi1.6.0-seed1-0.jsonl", "../session/sessiontest/testdata/pi16/pi1.6.0-seed3-1.jsonl",
		"../session/sessiontest/testdata/pi/scenario-16.jsonl", "../transcript/testdata/claude-code/tool_heavy.jsonl", "../transcript/testdata/codex/numbers.jsonl"} {
		id := fmt.Sprintf("itest-static-%d", i)
		if out, err := exec.CommandContext(ctx, old, "import", "-url", c.urls(), "-id", id, f).CombinedOutput(); err != nil {
			t.Fatalf("%s import %s: %v\n%s", prev.version, f, err, out)
		}
		static = append(static, id)
	}

	type step struct {
		node   int
		bin    string
		action string
	}
	roll := []step{{0, bin, "upgraded"}, {1, bin, "upgraded"}, {2, bin, "upgraded"}, {0, old, "rolled back to " + prev.version}}
	var report strings.Builder
	deadline := time.Now().Add(*soak)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		if round > 0 {
			// A longer run goes up and down again: the rolled-back node
			// forward, then every node back and forward once more.
			roll = []step{{0, bin, "upgraded"}, {1, old, "rolled back"}, {2, old, "rolled back"}, {0, old, "rolled back"},
				{0, bin, "upgraded"}, {1, bin, "upgraded"}, {2, bin, "upgraded"}, {0, old, "rolled back to " + prev.version}}
		}
		for k, s := range roll {
			acksBefore := w.l.ackCount()
			mark := time.Now()
			c.terminate(s.node)
			c.nodes[s.node].bin = s.bin
			c.restart(s.node)
			gap := waitForAck(t, w.l, mark, 60*time.Second)
			took := time.Since(mark)
			read := time.Now()
			sessiontest.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error { return readableByBoth(ctx, c, k, old, bin, sessions, static) })
			fmt.Fprintf(&report, "  %s %s: write gap %v, the node back and ready after %v, %d appends acknowledged meanwhile; every session read by both versions in %v\n",
				c.nodes[s.node].name, s.action, gap.Round(time.Millisecond), took.Round(time.Millisecond), w.l.ackCount()-acksBefore, time.Since(read).Round(time.Millisecond))
		}
	}
	w.stop()
	stopped = true
	linReport := lin.stop(t)
	v := settledVerdict(t, ctx, c, w.l)
	fmt.Fprintf(&report, "appends attempted %d, acknowledged %d, stored %d; lost %d, duplicated %d, never sent %d; writer errors %d (the last: %v)\n%s\n",
		v.Attempted, v.Acked, v.Stored, v.Lost, v.Duplicated, v.NeverSent, w.l.errors.Load(), w.l.lastErr.Load(), linReport)
	if v.Lost != 0 || v.Duplicated != 0 || v.NeverSent != 0 || v.Acked == 0 {
		t.Errorf("ledger and stream disagree: %+v", v)
	}
	sessiontest.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error { return treesAgree(t, ctx, c, sessions) })

	appendLarge(bin, "large-current")
	// The blob GC of either version, then nothing left over: the blobs are
	// the two large messages' (each read back whole by either version),
	// and every snapshot object is named by a head.
	// This build's gc also collects the objects of snapshot saves cut
	// short (by a node stopping, of either version): with nothing written
	// any more and the snapshot stores still for a while, no save is in
	// flight, so a short grace period deletes exactly those.
	gcLine := regexp.MustCompile(`^blobs (\d+): 0 deleted`)
	snapshotsStill(t, ctx, c.urls(), 3*time.Second)
	for _, b := range []string{old, bin} {
		args := []string{"gc", "-url", c.urls()}
		if b == bin {
			args = append(args, "-snapshot-grace", "1s")
		}
		out, err := exec.CommandContext(ctx, b, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s gc: %v\n%s", filepath.Base(b), err, out)
		}
		fmt.Fprintf(&report, "%s gc: %s", filepath.Base(b), out)
		if m := gcLine.FindStringSubmatch(string(out)); m == nil || m[1] != "2" {
			t.Errorf("%s gc: %s; want the two large messages' blobs, nothing deleted", filepath.Base(b), out)
		}
		exported, err := exec.CommandContext(ctx, b, "export", "-url", c.urls(), "itest-blobs").Output()
		if err != nil || bytes.Count(exported, []byte(" the content of a large tool output")) != 2*6000 {
			t.Errorf("%s export of the large messages: %v, %d bytes", filepath.Base(b), err, len(exported))
		}
	}
	if left := snapshotLeftovers(t, ctx, c.urls()); len(left) > 0 {
		t.Errorf("%d snapshot objects no head names: %v", len(left), left)
	}

	// A backup the previous release took restores into this one.
	backup := filepath.Join(t.TempDir(), "backup")
	if out, err := exec.CommandContext(ctx, old, "backup", "-url", c.urls(), backup).CombinedOutput(); err != nil {
		t.Fatalf("%s backup: %v\n%s", prev.version, err, out)
	}
	data := filepath.Join(t.TempDir(), "restored")
	out, err := exec.CommandContext(ctx, bin, "restore", "-data", data, backup).CombinedOutput()
	if err != nil {
		t.Fatalf("restore of %s's backup: %v\n%s", prev.version, err, out)
	}
	fmt.Fprintf(&report, "%s's backup restored into this build: %s", prev.version, out)
	for _, sid := range sessions {
		a, err1 := exec.CommandContext(ctx, bin, "export", "-url", c.urls(), sid).Output()
		b, err2 := exec.CommandContext(ctx, bin, "export", "-data", data, sid).Output()
		if err1 != nil || err2 != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s restored from %s's backup differs from the cluster's (%v, %v; %d and %d bytes)", sid, prev.version, err1, err2, len(a), len(b))
		}
	}
	t.Logf("rolling upgrade from %s (%.12s) to this build and back, three nodes under load:\n%s", prev.version, prev.commit, report.String())
}

// readableByBoth exports sessions with the old and the new binary,
// through node k+i for session i at step k (each step reads through every
// node): every static session, and a quarter of the growing ones in turn
// (over the four steps, each). Each export must succeed; a static
// session's must be the same from both, and, the others only growing, the
// one taken later must begin with the one taken before.
func readableByBoth(ctx context.Context, c *procCluster, k int, old, current string, growing, static []string) error {
	var sessions []string
	for i, sid := range growing {
		if i%4 == k%4 {
			sessions = append(sessions, sid)
		}
	}
	grown := len(sessions)
	for i, sid := range append(sessions, static...) {
		n := (k + i) % len(c.nodes)
		var before []byte
		for _, b := range []string{old, current} {
			out, err := exec.CommandContext(ctx, b, "export", "-url", c.url(n), sid).Output()
			if err != nil {
				return fmt.Errorf("%s export of %s through %s: %w", filepath.Base(b), sid, c.nodes[n].name, err)
			}
			if i >= grown && before != nil && !bytes.Equal(out, before) {
				return fmt.Errorf("%s through %s: the two versions export it differently (%d and %d bytes)", sid, c.nodes[n].name, len(before), len(out))
			}
			if before != nil && !bytes.HasPrefix(out, before) {
				return fmt.Errorf("%s through %s: the new build's export does not continue the old one's", sid, c.nodes[n].name)
			}
			before = out
		}
	}
	return nil
}

// snapshotBuckets connects to the cluster and gives the snapshot bucket of
// each partition.
func snapshotBuckets(t *testing.T, urls string) (jetstream.JetStream, []string) {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	var buckets []string
	for _, name := range layout().Streams() {
		cfg := layout()
		cfg.Stream = name
		buckets = append(buckets, cfg.SnapshotBucket())
	}
	return js, buckets
}

// snapshotsStill waits until no partition's snapshot store has changed
// for quiet: every save has ended.
func snapshotsStill(t *testing.T, ctx context.Context, urls string, quiet time.Duration) {
	t.Helper()
	js, buckets := snapshotBuckets(t, urls)
	state := func() (sum string) {
		for _, b := range buckets {
			if st, err := js.Stream(ctx, "OBJ_"+b); err == nil {
				sum += fmt.Sprintf("%s:%d;", b, st.CachedInfo().State.LastSeq)
			}
		}
		return sum
	}
	last, since := state(), time.Now()
	sessiontest.CheckFor(t, 2*time.Minute, 250*time.Millisecond, func() error {
		if now := state(); now != last {
			last, since = now, time.Now()
		}
		if time.Since(since) < quiet {
			return fmt.Errorf("snapshot stores changed %v ago", time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
}

// snapshotLeftovers lists the objects of every partition's snapshot store
// that no snapshot head names (its snapshot or the one before, their
// skeletons, tips and body segments).
func snapshotLeftovers(t *testing.T, ctx context.Context, urls string) []string {
	t.Helper()
	js, buckets := snapshotBuckets(t, urls)
	var left []string
	for _, bucket := range buckets {
		objs, err := js.ObjectStore(ctx, bucket)
		if err != nil {
			continue // no snapshot taken in this partition
		}
		heads, err := js.KeyValue(ctx, bucket+"_HEADS")
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]bool{}
		keys, _ := heads.ListKeys(ctx)
		for k := range keys.Keys() {
			e, err := heads.Get(ctx, k)
			if err != nil {
				continue
			}
			var h snapshots.Head
			if err := json.Unmarshal(e.Value(), &h); err != nil {
				t.Fatalf("head %s: %v", k, err)
			}
			for _, o := range []string{h.Object, h.Prev} {
				if o != "" {
					named[o+".skel"], named[o+".tip"] = true, true
				}
			}
			for _, s := range append(h.Segments(), h.PrevSegments()...) {
				named[s] = true
			}
		}
		list, err := objs.List(ctx)
		if err != nil {
			continue // an empty store
		}
		for _, o := range list {
			if !named[o.Name] {
				left = append(left, bucket+"/"+o.Name)
			}
		}
	}
	return left
}
