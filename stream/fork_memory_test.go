package stream_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// peakHeap runs fn and returns how far the heap's live objects rose above
// where they were, sampled every millisecond (the collector run often, so
// that garbage does not pass for what is held).
func peakHeap(t *testing.T, fn func()) uint64 {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// forkInChild forks session big in a child process (SESSIONLOG_FORK_CHILD:
// "lean" by CopyFork, "held" by opening the session and copying it) and
// returns the peak of its heap's growth, and for "lean" the entries and
// bytes copied.
func forkInChild(t *testing.T, cfg stream.Config, how string) [3]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestForkChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SESSIONLOG_FORK_CHILD="+how, "SESSIONLOG_FORK_URL="+node.ClientURL(),
		"SESSIONLOG_FORK_STREAM="+cfg.Stream, "SESSIONLOG_FORK_PREFIX="+cfg.Prefix)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the %s fork's process: %v\n%s", how, err, out)
	}
	var r [3]uint64
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "PEAK %d %d %d", &r[0], &r[1], &r[2]); err == nil {
			return r
		}
	}
	t.Fatalf("the %s fork's process said no peak:\n%s", how, out)
	return r
}

// TestForkChild is forkInChild's process.
func TestForkChild(t *testing.T) {
	how := os.Getenv("SESSIONLOG_FORK_CHILD")
	if how == "" {
		t.Skip("the process of TestForkHoldsNeitherSessionNorCopy's forks")
	}
	ctx := context.Background()
	c, err := nats.Connect(os.Getenv("SESSIONLOG_FORK_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = os.Getenv("SESSIONLOG_FORK_STREAM"), os.Getenv("SESSIONLOG_FORK_PREFIX")
	b, err := stream.New(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	h := session.Header{ID: how, Version: 3, Timestamp: "2026-12-07T00:00:02.000Z"}
	var rep stream.ForkReport
	peak := peakHeap(t, func() {
		if how == "lean" {
			dst, r, err := b.CopyFork(ctx, "big", session.FromLeaf(), h, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep = r
			dst.Close(ctx)
			return
		}
		src, err := b.OpenStore(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close(ctx)
		dst, _, err := session.Fork(ctx, src, session.FromLeaf(), h, "big",
			func(ctx context.Context, h session.Header) (session.Store, error) { return b.CreateStore(ctx, h) }, b.Delete)
		if err != nil {
			t.Fatal(err)
		}
		dst.Close(ctx)
	})
	fmt.Printf("PEAK %d %d %d\n", peak, rep.Copied, rep.Bytes)
}

// A fork holds neither the session nor its copy: its memory grows with the
// number of entries, not their size. Opening the session and copying it
// (the fork before) held it twice: a 367 MB session's fork took a node
// from 0.5 to 2 GB (issue 68, item 4).
func TestForkHoldsNeitherSessionNorCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 40 MB session")
	}
	ctx := context.Background()
	b := newBackend(t)
	st, err := b.Create(ctx, session.Header{ID: "big", Version: 3, Timestamp: "2026-12-07T00:00:00.000Z", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("y", 100<<10) // under the offload threshold: stored inline
	const n = 400                        // 40 MB
	parent := ""
	for i := 0; i < n; i += 8 {
		var batch []*session.Entry
		for j := i; j < i+8; j++ {
			id := fmt.Sprintf("m%03d", j)
			batch = append(batch, &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2026-12-07T00:00:01.000Z",
				Message: &session.Message{Role: session.RoleUser, Timestamp: 1, Content: session.TextContent(fmt.Sprintf("%d %s", j, text))}})
			parent = id
		}
		if err := st.(session.BatchAppender).AppendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	st.Close(ctx)
	size := uint64(n * len(text))

	// Each way of forking runs in a process of its own, talking to the
	// node over TCP: what is measured is the fork's memory, not the
	// node's (in this process, it caches what the fork reads and writes).
	held := forkInChild(t, b.Config(), "held")
	lean := forkInChild(t, b.Config(), "lean")
	rep := stream.ForkReport{Copied: int(lean[1]), Bytes: int64(lean[2])}
	t.Logf("a fork of %d MB: %.1f MB at most held by CopyFork, %.1f MB by opening and copying", size>>20, float64(lean[0])/(1<<20), float64(held[0])/(1<<20))
	if rep.Copied != n || rep.Bytes < int64(size) {
		t.Fatalf("copied %d entries, %d bytes; want %d, at least %d", rep.Copied, rep.Bytes, n, size)
	}
	// Its bounds, whatever the session's size: a read batch (8 MiB), a
	// write batch (forkBatchBytes) and its encoding, and slack. The way
	// before is measured alongside: it held the session and its copy.
	if bound := uint64(24 << 20); lean[0] > bound || 3*lean[0] > held[0] {
		t.Fatalf("the fork held %d MB of a %d MB session at once (opening and copying: %d MB): it should hold neither", lean[0]>>20, size>>20, held[0]>>20)
	}
	// The copy reads back whole.
	got, err := b.OpenStore(ctx, "lean")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close(ctx)
	es, err := got.Entries(ctx)
	if err != nil || len(es) != n || !strings.HasSuffix(es[n-1].Message.Content.Paragraphs(), text) {
		t.Fatalf("the copy: %d entries (%v)", len(es), err)
	}
}
