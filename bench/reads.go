package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/session/system"
)

// readSize is the length of the session read under writes.
const readSize = 1000

// readsUnderWrites times reads of one session (Leaf, and BuildContext of
// its 1k-entry path) idle, then while cfg.Writers goroutines append to the
// same session through the same store: readers must not wait for the
// writers' publishes, only for the moment each applies its entry.
func readsUnderWrites(ctx context.Context, cfg Config, n *node, r *Report, p progress) error {
	p.say("reads under writes: %d-entry session, %d writers, fsync %s", readSize, cfg.Writers, n.sync)
	b, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	h, entries := sessiongen.Generate(readSize)
	h.ID = "reads"
	st, err := b.CreateStore(ctx, h)
	if err != nil {
		return err
	}
	defer st.Close(context.Background())
	for i := 0; i < len(entries); i += 500 {
		if err := st.AppendBatch(ctx, entries[i:min(i+500, len(entries))]); err != nil {
			return fmt.Errorf("bench: fill: %w", err)
		}
	}
	sess, err := session.New(rebasing{st}, system.Config())
	if err != nil {
		return err
	}
	leaf := func() error { _, err := st.Leaf(ctx); return err }
	// The context of the first readSize entries: the same work whatever
	// the writers add after them.
	at := entries[len(entries)-1].ID
	build := func() error {
		c, err := sess.BuildContext(ctx, session.FromEntry(at))
		if err == nil && len(c.Messages) != readSize {
			err = fmt.Errorf("bench: a context of %d messages", len(c.Messages))
		}
		return err
	}
	idleLeaf, idleBuild, err := sample(cfg.Duration, leaf, build)
	if err != nil {
		return err
	}

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var appended atomic.Int64
	werr := make(chan error, cfg.Writers)
	msg, _ := message(cfg.PayloadBytes)
	for range cfg.Writers {
		wg.Go(func() {
			for wctx.Err() == nil {
				if _, err := sess.AppendMessage(wctx, msg); err != nil {
					if wctx.Err() == nil {
						werr <- err
					}
					return
				}
				appended.Add(1)
			}
		})
	}
	for appended.Load() < int64(cfg.Writers) && len(werr) == 0 {
		time.Sleep(time.Millisecond) // the writers are under way
	}
	busyLeaf, busyBuild, serr := sample(cfg.Duration, leaf, build)
	stop()
	wg.Wait()
	close(werr)
	for _, err := range []error{<-werr, serr} {
		if err != nil {
			return err
		}
	}
	group := fmt.Sprintf("Reads of a %d-entry session while %d goroutines append to it, fsync %s", readSize, cfg.Writers, n.sync)
	for _, m := range []struct {
		name       string
		idle, busy latencies
	}{{"Leaf", idleLeaf, busyLeaf}, {"BuildContext", idleBuild, busyBuild}} {
		r.add(Row{Group: group, Name: m.name + " p50", Ours: micros(m.busy.pct(50)), Base: micros(m.idle.pct(50)), Unit: "µs", BaseName: "the same read, idle"})
		p99 := Row{Group: group, Name: m.name + " p99", Ours: micros(m.busy.pct(99)), Base: micros(m.idle.pct(99)), Unit: "µs", BaseName: "the same read, idle", Goal: "≤ 2x"}
		p99.Met = p99.Ratio() <= 2
		r.add(p99)
	}
	r.note("reads under writes: %d reads of each kind idle, %d busy, while %d appends landed", len(idleLeaf), len(busyLeaf), appended.Load())
	return nil
}

// sample times calls of a and b, one after the other every readPace,
// for d: a reader of the kind a service is, not a hot loop.
func sample(d time.Duration, a, b func() error) (la, lb latencies, err error) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(readPace) {
		for _, m := range []struct {
			fn func() error
			l  *latencies
		}{{a, &la}, {b, &lb}} {
			t0 := time.Now()
			if err := m.fn(); err != nil {
				return nil, nil, err
			}
			*m.l = append(*m.l, time.Since(t0))
		}
	}
	return la, lb, nil
}

// readPace is the pause between reads.
const readPace = 500 * time.Microsecond
