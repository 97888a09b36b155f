package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// The many-sessions part: a deployment of cfg.ManySessions
// sessions of 20 small entries each (see generate),
// and what it costs the server per session (memory once idle, disk),
// what a listing costs (the first page in a new process, later pages),
// and opening a random session. Beside it, raw publishes of the same
// count of sessions in two subject layouts measure what each distinct
// subject costs the server: one subject per entry type (the layout of
// older deployments) and one subject per session.

// manyEntries are the entries of each generated session, header aside.
const manyEntries = 19

// manyPartitions is the layout of the generated deployment: atomic
// batches are staged one at a time per stream, so
// partitions are what makes generating a million sessions take minutes.
const manyPartitions = 4

// smallSession is a session of a user message, an assistant reply, a
// model change and a label, repeated: the shape the issue measured.
func smallSession(id string) (session.Header, []*session.Entry) {
	h := session.Header{Version: session.CurrentVersion, ID: id, Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/work"}
	entries := make([]*session.Entry, 0, manyEntries)
	parent := ""
	for i := range manyEntries {
		e := &session.Entry{ID: fmt.Sprintf("%08x", i+1), ParentID: parent, Timestamp: "2025-01-01T00:00:01.000Z"}
		switch i % 4 {
		case 0:
			e.Type, e.Message = session.TypeMessage, &session.Message{Role: session.RoleUser, Content: session.TextContent("fix the failing test in store.go"), Timestamp: 1735689601000}
		case 1:
			e.Type, e.Message = session.TypeMessage, &session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "anthropic", Model: "claude-sonnet-4", StopReason: "stop"},
				Content: session.TextContent("Done: the test passes."), Timestamp: 1735689601000}
		case 2:
			e.Type, e.Body = session.TypeModelChange, &session.ModelChange{Provider: "anthropic", ModelID: "claude-sonnet-4"}
		case 3:
			e.Type, e.Body = session.TypeLabel, &session.Label{TargetID: entries[0].ID, Label: "checkpoint"}
		}
		entries = append(entries, e)
		parent = e.ID
	}
	return h, entries
}

func manySessions(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	n := cfg.ManySessions
	group := fmt.Sprintf("%d sessions of %d entries, one node, %d partitions", n, manyEntries+1, manyPartitions)

	// Our layout, through the library.
	heapBefore := settledHeap(cfg.Settle)
	nd, err := startNode(ctx, filepath.Join(dir, "many"), false)
	if err != nil {
		return err
	}
	defer nd.close()
	b, err := nd.backend(ctx, func(c *stream.Config) { c.Partitions = manyPartitions })
	if err != nil {
		return err
	}
	p.say("many sessions: generating %d", n)
	start := time.Now()
	if err := generate(ctx, b, n, 32); err != nil {
		return err
	}
	took := time.Since(start)
	b.Close(ctx)
	r.add(Row{Group: group, Name: "generated per second", Ours: float64(n) / took.Seconds(), Unit: "sessions/s", HigherIsBetter: true})
	// Idle means past the dedupe window too: the server keeps every
	// message id it saw for that long.
	settle := cfg.Settle
	if settle > 0 {
		settle = max(settle, b.Config().DedupeWindow+10*time.Second)
	}
	mem := settledHeap(settle) - heapBefore
	disk, err := dirSize(filepath.Join(dir, "many"))
	if err != nil {
		return err
	}
	row := Row{Group: group, Name: "server memory per idle session", Ours: mem / float64(n), Unit: "B", Goal: "≤ 1024 B"}
	row.Met = row.Ours <= 1024
	r.add(row)
	r.add(Row{Group: group, Name: "disk per session", Ours: disk / float64(n), Unit: "B"})

	fresh, err := nd.attach(ctx, b.Config())
	if err != nil {
		return err
	}
	defer fresh.Close(ctx)
	start = time.Now()
	page, err := fresh.List(ctx, session.ListOptions{})
	if err != nil {
		return err
	}
	cold := time.Since(start)
	if len(page.Sessions) != min(n, session.DefaultPageSize) {
		return fmt.Errorf("bench: first page of %d sessions holds %d", n, len(page.Sessions))
	}
	row = Row{Group: group, Name: "list: first page, first call of a process", Ours: millis(cold), Unit: "ms", Goal: "≤ 100 ms"}
	row.Met = row.Ours <= 100
	r.add(row)
	warm, err := best(5, func() error {
		_, err := fresh.List(ctx, session.ListOptions{Cursor: page.Next})
		return err
	})
	if err != nil {
		return err
	}
	r.add(Row{Group: group, Name: "list: a later page", Ours: millis(warm), Unit: "ms"})

	// Beside each open, the floor: a raw read of another random session's
	// messages (one direct-get batch on its subject), interleaved so that
	// both meet the server's block cache alike.
	var opens, raws latencies
	for range 200 {
		id := fmt.Sprintf("m%d", rand.IntN(n))
		t0 := time.Now()
		st, err := fresh.OpenStore(ctx, id)
		if err != nil {
			return err
		}
		opens = append(opens, time.Since(t0))
		st.Close(ctx)
		id = fmt.Sprintf("m%d", rand.IntN(n))
		t0 = time.Now()
		if err := rawDirectRead(ctx, fresh, id); err != nil {
			return err
		}
		raws = append(raws, time.Since(t0))
	}
	r.add(Row{Group: group, Name: "open a random session, p50", Ours: millis(opens.pct(50)), Base: millis(raws.pct(50)), Unit: "ms", BaseName: "raw read of its messages"})
	row = Row{Group: group, Name: "open a random session, p99", Ours: millis(opens.pct(99)), Base: millis(raws.pct(99)), Unit: "ms", BaseName: "raw read of its messages", Goal: "≤ 5 ms"}
	row.Met = row.Ours <= 5
	r.add(row)
	fresh.Close(ctx)
	nd.close()

	// What a subject costs the server: the same sessions as raw messages.
	var perType, perSession [2]float64 // memory, disk per session
	for _, typed := range []bool{true, false} {
		p.say("many sessions: raw, a subject per %s", map[bool]string{true: "entry type", false: "session"}[typed])
		mem, disk, err := rawLayout(ctx, cfg, filepath.Join(dir, fmt.Sprintf("raw-%v", typed)), n, typed)
		if err != nil {
			return err
		}
		if typed {
			perType = [2]float64{mem, disk}
		} else {
			perSession = [2]float64{mem, disk}
		}
	}
	r.add(Row{Group: group, Name: "raw: server memory per session, a subject per entry type", Ours: perType[0], Base: perSession[0], Unit: "B", BaseName: "one subject per session"})
	r.add(Row{Group: group, Name: "raw: disk per session, a subject per entry type", Ours: perType[1], Base: perSession[1], Unit: "B", BaseName: "one subject per session"})
	return nil
}

// rawLayout publishes n sessions of 20 messages (the header and entries of
// smallSession, msgpack-sized) into a stream of its own on a fresh node,
// on <id>.<type> subjects or on one subject per session, and returns the
// server's memory and disk per session once idle.
func rawLayout(ctx context.Context, cfg Config, dir string, n int, typed bool) (mem, disk float64, err error) {
	before := settledHeap(cfg.Settle)
	nd, err := startNode(ctx, dir, false)
	if err != nil {
		return 0, 0, err
	}
	defer nd.close()
	js, err := jetstream.New(nd.nc)
	if err != nil {
		return 0, 0, err
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage}); err != nil {
		return 0, 0, err
	}
	_, entries := smallSession("x")
	types := []string{"session"}
	for _, e := range entries {
		types = append(types, string(e.Type))
	}
	payload := make([]byte, 120)
	const window = 4096 // async publishes in flight
	for i := range n {
		for k, typ := range types {
			subject := fmt.Sprintf("raw.m%d", i)
			if typed {
				subject += "." + typ
			}
			if _, err := js.PublishAsync(subject, payload); err != nil {
				return 0, 0, err
			}
			if (i*len(types)+k)%window == window-1 {
				select {
				case <-js.PublishAsyncComplete():
				case <-ctx.Done():
					return 0, 0, ctx.Err()
				}
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	size, err := dirSize(dir)
	if err != nil {
		return 0, 0, err
	}
	return (settledHeap(cfg.Settle) - before) / float64(n), size / float64(n), nil
}

// generate creates sessions m0..m<n-1>, a header and then one append per
// entry, from writers goroutines. Not one atomic batch per session: on a
// stream of one replica the server stages every atomic batch in a file
// store of its own and fsyncs it, whatever the stream's sync policy, so
// batches ran at ~180 sessions/s against ~1100 for single appends.
func generate(ctx context.Context, b *stream.Backend, n, writers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				h, entries := smallSession(fmt.Sprintf("m%d", i))
				st, err := b.CreateStore(ctx, h)
				if err == nil {
					for _, e := range entries {
						if err = st.Append(ctx, e); err != nil {
							break
						}
					}
					if cerr := st.Close(ctx); err == nil {
						err = cerr
					}
				}
				if err != nil {
					errs <- fmt.Errorf("bench: generate m%d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// settledHeap is the heap in use once garbage is collected and the
// server's caches of idle data have expired: what idle data costs.
func settledHeap(settle time.Duration) float64 {
	time.Sleep(settle) // the file store drops idle block caches after ~10 s
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse)
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) (float64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return float64(total), err
}

// rawDirectRead reads session id's messages as one direct-get batch on
// its subjects, waiting for the end of the batch (what an open reads).
func rawDirectRead(ctx context.Context, b *stream.Backend, id string) error {
	nc := b.JetStream().Conn()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	req := fmt.Sprintf(`{"seq":1,"next_by_subj":%q,"batch":1000}`, b.SessionSubjects(id))
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+b.Config().StreamOf(id), inbox, []byte(req)); err != nil {
		return err
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return fmt.Errorf("bench: raw read of %s: %w", id, err)
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			if st := m.Header.Get("Status"); st != "204" {
				return fmt.Errorf("bench: raw read of %s: status %s", id, st)
			}
			return nil
		}
	}
}
