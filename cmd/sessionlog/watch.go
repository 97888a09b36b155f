package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
	"github.com/agentcore/sessionlog/tracker"
)

// typeList is a repeatable -type flag.
type typeList []session.EntryType

func (l *typeList) String() string { return fmt.Sprint(*l) }
func (l *typeList) Set(v string) error {
	for _, t := range strings.Split(v, ",") {
		*l = append(*l, session.EntryType(strings.TrimSpace(t)))
	}
	return nil
}

// runWatch prints entries of the given types from every session as JSON
// lines: from now on by default (an ephemeral consumer each watch has to
// itself), or through a durable consumer (-durable) whose position
// survives restarts and which watches of the same name share.
func runWatch(ctx context.Context, e env) error {
	fs := newFlags("watch", e)
	rf := addRepoFlags(fs)
	rf.create = true
	var types typeList
	fs.Var(&types, "type", "entry type to print (repeat, or comma-separate)")
	durable := fs.String("durable", "", "a durable consumer of this name: its position survives restarts, and watches of the same name share the entries")
	from := fs.String("from", "now", "where the watch starts: now, start, a stream sequence, or an RFC 3339 time (a durable: where it starts when new; default start)")
	rmDurable := fs.String("rm-durable", "", "remove the durable consumer of this name, and exit")
	limit := fs.Int("n", 0, "exit after this many entries (0: until interrupted)")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	if rf.files != "" {
		return usageError("watch needs JetStream, not -files")
	}
	if *rmDurable != "" {
		return withRepo(ctx, rf, func(repo session.Repo) error { return removeDurable(ctx, e, repo, *rmDurable) })
	}
	if len(types) == 0 {
		return usageError("give at least one -type")
	}
	if *durable != "" && !flagSet(fs, "from") {
		*from = "start" // a new durable sees every entry unless told otherwise
	}
	start, err := parseFrom(*from)
	if err != nil {
		return err
	}
	// An event consumer continues the writers' traces: exported when the
	// OTEL_* environment asks, as serve's are.
	tel, err := telemetry.Setup(ctx, telemetry.SetupConfig{ServiceName: "sessionlog-watch"})
	if err != nil {
		return err
	}
	defer tel.Close(context.WithoutCancel(ctx))
	// Without a serve, this process runs the node: it listens, so that
	// other invocations on the data dir can still append while it watches.
	rf.share = true
	return withRepo(ctx, rf, func(repo session.Repo) error {
		b, ok := repo.(*stream.Backend)
		if !ok {
			return errors.New("watch needs the JetStream backend")
		}
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		p := &printer{enc: json.NewEncoder(e.stdout), limit: *limit, stop: stop}
		if *durable == "" {
			return watchFrom(wctx, b, types, start, p)
		}
		cfg := tracker.DefaultEventConfig(*durable, types...)
		cfg.Start, cfg.StartSeq, cfg.StartTime = start.policy, start.seq, start.at
		// Printing takes no time: entries a stopped watch had fetched but
		// not printed go back to the durable within this.
		cfg.AckWait = durableAckWait
		sub, err := tracker.Subscribe(wctx, b, cfg, p.event)
		if err != nil {
			return err
		}
		<-wctx.Done()
		return sub.Close(context.WithoutCancel(ctx))
	})
}

// durableAckWait is how long a durable watch's entries wait for an
// acknowledgement before another watch of the durable gets them.
const durableAckWait = 2 * time.Second

// printer prints entries as JSON lines, at most limit (0: no limit).
type printer struct {
	mu      sync.Mutex
	enc     *json.Encoder
	limit   int
	printed int
	stop    func()
}

// event prints a durable consumer's event. Past the limit it holds the
// entry unacknowledged until the subscription closes, so the next watch
// of the durable gets it.
func (p *printer) event(ctx context.Context, ev tracker.Event) error {
	ok, err := p.take(map[string]any{"session": ev.Session, "seq": ev.Seq, "delivery": ev.Delivery}, ev.Entry)
	if err == nil && !ok {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// take prints one line unless the limit is reached (ok false); the last
// one it prints stops the watch.
func (p *printer) take(fields map[string]any, e *session.Entry) (ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit > 0 && p.printed >= p.limit {
		return false, nil
	}
	line, err := codec.EncodeEntry(e)
	if err != nil {
		return false, err
	}
	fields["entry"] = json.RawMessage(line)
	if err := p.enc.Encode(fields); err != nil {
		return false, err
	}
	p.printed++
	if p.limit > 0 && p.printed >= p.limit {
		p.stop()
	}
	return true, nil
}
