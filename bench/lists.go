package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// lists measures the first page of a listing as the sessions grow to each
// of cfg.ListSessions: on a new backend (cold) and again (warm).
func lists(ctx context.Context, cfg Config, n *node, r *Report, p progress) error {
	b, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	made := 0
	for _, count := range cfg.ListSessions {
		p.say("listing: creating sessions up to %d", count)
		if err := create(ctx, b, made, count); err != nil {
			return err
		}
		made = count
		// The floor of any page: one request to the index.
		floor, err := best(5, func() error {
			_, err := b.JetStream().AccountInfo(ctx)
			return err
		})
		if err != nil {
			return err
		}
		fresh, err := n.attach(ctx, b.Config())
		if err != nil {
			return err
		}
		var page session.ListPage
		start := time.Now()
		if page, err = fresh.List(ctx, session.ListOptions{}); err != nil {
			return err
		}
		cold := time.Since(start)
		if len(page.Sessions) != session.DefaultPageSize && count >= session.DefaultPageSize {
			return fmt.Errorf("bench: first page holds %d sessions", len(page.Sessions))
		}
		warm, err := best(5, func() error {
			_, err := fresh.List(ctx, session.ListOptions{})
			return err
		})
		if err != nil {
			return err
		}
		group := "List: first page (50) as sessions grow"
		r.add(Row{Group: group, Name: fmt.Sprintf("%d sessions, first call of a process", count), Ours: millis(cold), Base: millis(floor), Unit: "ms", BaseName: "one JetStream request"})
		r.add(Row{Group: group, Name: fmt.Sprintf("%d sessions, later calls", count), Ours: millis(warm), Base: millis(floor), Unit: "ms", BaseName: "one JetStream request"})
	}
	return nil
}

// attach opens another backend on the same stream, as a new process would.
func (n *node) attach(ctx context.Context, cfg stream.Config) (*stream.Backend, error) {
	return stream.New(ctx, n.nc, cfg)
}

// create makes sessions from..to-1 with 32 writers.
func create(ctx context.Context, b *stream.Backend, from, to int) error {
	return createWith(ctx, b, "list", from, to, nil)
}

// createWith makes sessions prefix-from..prefix-(to-1) with 32 writers,
// each filled by fill when set.
func createWith(ctx context.Context, b *stream.Backend, prefix string, from, to int, fill func(st *stream.Store, i int) error) error {
	return createHeaders(ctx, b, from, to, func(i int) session.Header { return header(fmt.Sprintf("%s-%07d", prefix, i)) }, fill)
}

// createHeaders makes the sessions of headers mk(from)..mk(to-1) with 32
// writers, each filled by fill when set.
func createHeaders(ctx context.Context, b *stream.Backend, from, to int, mk func(i int) session.Header, fill func(st *stream.Store, i int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= to {
					return
				}
				st, err := b.CreateStore(ctx, mk(i))
				if err == nil && fill != nil {
					err = fill(st, i)
				}
				if err == nil {
					err = st.Close(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
