package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
	"github.com/agentcore/sessionlog/session/system"
)

// freshnessSize is the length of the session the reads are of.
const freshnessSize = 100

// freshness times the service's open and context of a 100-entry session,
// linearizable and as "replica" reads, against the library reading the
// same session from a store it holds (no request, no barrier: the floor
// a service read can approach), and a bare request-reply of NATS (the
// floor of the hop), on the same node in the same run.
func freshness(ctx context.Context, cfg Config, n *node, r *Report, p progress) error {
	p.say("freshness: open and context, linearizable and replica reads, fsync %s", n.sync)
	sb, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())
	scfg := service.DefaultConfig(system.Config())
	scfg.Limits.Rate, scfg.Limits.Burst = 1e6, 1e6
	scfg.Limits.TenantWriteBytes, scfg.Limits.TenantWriteBurst = 1<<40, 1<<40 // the engine measured, not the admission bounds
	svc, err := service.Start(ctx, n.nc, sb, scfg)
	if err != nil {
		return err
	}
	defer svc.Close(context.WithoutCancel(ctx))
	c := api.NewClient(n.nc, scfg.Subject)
	if err := c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "fresh"}, nil); err != nil {
		return err
	}
	h, entries := sessiongen.Generate(freshnessSize)
	batch := make([]jsontext.Value, 0, len(entries))
	for _, e := range entries {
		b, err := codec.EncodeEntry(e)
		if err != nil {
			return err
		}
		batch = append(batch, b)
	}
	if err := c.Call(ctx, api.OpAppend, api.AppendRequest{Session: "fresh", Entries: batch}, nil); err != nil {
		return err
	}
	// The library's side: the same entries in a store it holds.
	b, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	defer b.Close(context.Background())
	h.ID = "fresh"
	st, err := b.CreateStore(ctx, h)
	if err != nil {
		return err
	}
	defer st.Close(context.Background())
	if err := st.AppendBatch(ctx, entries); err != nil {
		return err
	}
	sess, err := session.New(st, system.Config())
	if err != nil {
		return err
	}
	ops := max(cfg.ClientOps, 200)
	timed := func(op func() error) (latencies, error) {
		var l latencies
		for range ops {
			t0 := time.Now()
			if err := op(); err != nil {
				return nil, err
			}
			l = append(l, time.Since(t0))
		}
		return l, nil
	}
	call := func(op string, req any) func() error { return func() error { return c.Call(ctx, op, req, nil) } }
	replica := api.Freshness{Consistency: api.Replica, MaxLagMs: 1000}
	libOpen, err := timed(func() error {
		return st.ReadStateAt(ctx, func(t *session.Tree, _ uint64) error { _ = t.Info(); return nil })
	})
	if err != nil {
		return err
	}
	// A context answered remotely is encoded: the library's side does
	// that too, message by message with the pi codec, as the service does.
	libContext, err := timed(func() error {
		c, err := sess.BuildContext(ctx)
		for _, m := range c.Messages {
			if err != nil {
				break
			}
			_, err = codec.EncodeMessage(m)
		}
		return err
	})
	if err != nil {
		return err
	}
	echoSub, err := n.nc.Subscribe("bench.echo.freshness", func(m *nats.Msg) { m.Respond([]byte(`{}`)) })
	if err != nil {
		return err
	}
	defer echoSub.Unsubscribe()
	echo, err := timed(func() error {
		_, err := n.nc.RequestWithContext(ctx, "bench.echo.freshness", []byte(`{"session":"fresh"}`))
		return err
	})
	if err != nil {
		return err
	}
	rows := []struct {
		name string
		op   func() error
		base latencies
		goal bool
	}{
		{"open p50, linearizable (barrier write)", call(api.OpOpen, api.SessionRequest{Session: "fresh"}), libOpen, false},
		{"open p50, replica within 1 s", call(api.OpOpen, api.SessionRequest{Session: "fresh", Freshness: replica}), libOpen, true},
		{"context p50, linearizable (barrier write)", call(api.OpContext, api.ContextRequest{Session: "fresh"}), libContext, false},
		{"context p50, replica within 1 s", call(api.OpContext, api.ContextRequest{Session: "fresh", Freshness: replica}), libContext, true},
	}
	group := fmt.Sprintf("Reads through the service, %d-entry session, one at a time (%d each), fsync %s", freshnessSize, ops, n.sync)
	floor := millis(echo.pct(50))
	for _, row := range rows {
		l, err := timed(row.op)
		if err != nil {
			return err
		}
		ours, base := millis(l.pct(50)), millis(row.base.pct(50))
		out := Row{Group: group, Name: row.name, Ours: ours, Base: base, Unit: "ms", BaseName: "the library reading a store it holds (context: and encoding it)"}
		if row.goal {
			// What a replica read may add to the library's: the hop, a
			// request and its reply of the answer's size, taken at 0.1 ms
			// (ten bare request-replies on this node are 0.1 ms).
			out.Goal, out.Met = "≤ library + 0.1 ms", ours <= base+0.1
		}
		r.add(out)
	}
	r.note("freshness: a bare NATS request-reply on this node, p50 %.3f ms", floor)
	return nil
}
