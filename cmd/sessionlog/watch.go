package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/replica"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
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
// lines, through a durable consumer: each is printed at least once, and a
// restarted watch with the same -durable goes on where it stopped.
func runWatch(ctx context.Context, e env) error {
	fs := newFlags("watch", e)
	rf := addRepoFlags(fs)
	var types typeList
	fs.Var(&types, "type", "entry type to print (repeat, or comma-separate)")
	durable := fs.String("durable", "", "consumer name: its position survives restarts (default watch-<types>)")
	limit := fs.Int("n", 0, "exit after this many entries (0: until interrupted)")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	if len(types) == 0 {
		return usageError("give at least one -type")
	}
	// An event consumer continues the writers' traces: exported when the
	// OTEL_* environment asks, as serve's are.
	tel, err := telemetry.Setup(ctx, telemetry.SetupConfig{ServiceName: "sessionlog-watch"})
	if err != nil {
		return err
	}
	defer tel.Close(context.WithoutCancel(ctx))
	if *durable == "" {
		names := make([]string, len(types))
		for i, t := range types {
			names[i] = string(t)
		}
		*durable = "watch-" + strings.Join(names, "-")
	}
	if rf.files != "" {
		return usageError("watch needs JetStream, not -files")
	}
	cfg := replica.DefaultEventConfig(*durable, types...)
	return withRepo(ctx, rf, func(repo session.Repo) error {
		b, ok := repo.(*stream.Backend)
		if !ok {
			return errors.New("watch needs the JetStream backend")
		}
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		var mu sync.Mutex
		printed := 0
		enc := json.NewEncoder(e.stdout)
		sub, err := replica.Subscribe(wctx, b, cfg, func(ctx context.Context, ev replica.Event) error {
			line, err := codec.EncodeEntry(ev.Entry)
			if err != nil {
				return err
			}
			mu.Lock()
			if *limit > 0 && printed >= *limit {
				mu.Unlock()
				// Not printed: hold it unacknowledged until the
				// subscription closes, so the next watch gets it.
				<-ctx.Done()
				return ctx.Err()
			}
			defer mu.Unlock()
			if err := enc.Encode(map[string]any{"session": ev.Session, "seq": ev.Seq, "delivery": ev.Delivery, "entry": json.RawMessage(line)}); err != nil {
				return err
			}
			printed++
			if *limit > 0 && printed >= *limit {
				stop()
			}
			return nil
		})
		if err != nil {
			return err
		}
		<-wctx.Done()
		return sub.Close(context.WithoutCancel(ctx))
	})
}
