package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/internal/await"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// edgesPart measures an edge node's sync with its hub, on two nodes of
// this process linked as a leafnode (loopback): the catch-up of what the
// edge wrote while offline, against raw JetStream sourcing of the same
// messages in the same run; and the online lag from an edge's
// acknowledged append to the hub holding it.
func edgesPart(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	// The hub as serve makes it: a tenant, and the edge's credentials
	// carrying what the link may (service.EdgePermissions).
	hcfg := cluster.DefaultConfig(dir + "/edge-hub")
	hcfg.Domain, hcfg.LeafListen = "hub", "127.0.0.1:0"
	hcfg.Auth = &cluster.AuthConfig{
		Tenants: []cluster.Tenant{{Name: "bench", Users: []cluster.User{{Name: "bench", Password: "bench-pw"}}, Edges: []cluster.Edge{{Domain: "edge", User: "edge", Password: "edge-pw"}}}},
	}
	service.Permit(hcfg.Auth, stream.DefaultConfig(), hcfg.Domain)
	hn, err := cluster.Start(ctx, hcfg)
	if err != nil {
		return err
	}
	hub := &node{n: hn}
	defer hub.close()
	if hub.nc, err = hn.ConnectTenant("bench"); err != nil {
		return err
	}
	edge, err := startNodeWith(ctx, dir+"/edge-edge", func(c *cluster.Config) {
		c.Domain, c.ServerName = "edge", "sessionlog-edge"
		c.Hub = &cluster.HubConfig{URLs: []string{strings.Replace(hub.n.LeafURL(), "nats-leaf://", "nats-leaf://edge:edge-pw@", 1)}}
	})
	if err != nil {
		return err
	}
	defer edge.close()
	if err := waitFor(ctx, time.Minute, func() error {
		if !edge.n.Linked() {
			return fmt.Errorf("bench: the edge did not link to the hub")
		}
		return nil
	}); err != nil {
		return err
	}
	layout := func(origin string) func(*stream.Config) {
		return func(c *stream.Config) {
			c.Stream, c.Prefix, c.Origin, c.Edge = "EDGE", "edge", origin, origin == "edge"
			c.DedupeWindow = window
		}
	}
	eb, err := edge.backend(ctx, layout("edge"))
	if err != nil {
		return err
	}
	hb, err := hub.backend(ctx, layout("hub"))
	if err != nil {
		return err
	}
	n := cfg.EdgeEntries
	const perSession = 1000
	p.say("edges: %d entries written on the edge, offline", n)
	msg, _ := message(cfg.PayloadBytes)
	sessions := (n + perSession - 1) / perSession
	err = createWith(ctx, eb, "away", 0, sessions, func(st *stream.Store, i int) error {
		for k := 0; k < perSession && i*perSession+k < n; k += 100 {
			var batch []*session.Entry
			for j := k; j < min(k+100, perSession, n-i*perSession); j++ {
				m := msg
				e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", j+1), Timestamp: "2026-01-01T00:00:00.000Z", Message: &m}
				if j > 0 {
					e.ParentID = fmt.Sprintf("%08x", j)
				}
				batch = append(batch, e)
			}
			if err := st.AppendBatch(ctx, batch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	want, err := subjectCount(ctx, eb.StreamOf("away-0"), "edge.*.o")
	if err != nil {
		return err
	}
	// The raw baseline: the same messages in a plain stream of the edge.
	ejs, _ := jetstream.New(edge.nc)
	hjs, _ := jetstream.New(hub.nc)
	raw, err := ejs.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage, Duplicates: window})
	if err != nil {
		return err
	}
	if err := copyMessages(ctx, edge.nc, eb.StreamOf("away-0"), raw, want); err != nil {
		return err
	}
	// The hub's raw stream is made now and given its source when
	// measured, as the sessions streams are.
	if _, err := hjs.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"hubraw.>"}, Storage: jetstream.FileStorage, Duplicates: window}); err != nil {
		return err
	}

	p.say("edges: catching up %d messages, ours then raw sourcing", want)
	start := time.Now()
	if _, err := hb.SourceFrom(ctx, "edge", eb.Config().Streams()); err != nil {
		return err
	}
	if _, err := eb.SourceFrom(ctx, "hub", hb.Config().Streams()); err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Minute, func() error { return holds(ctx, hb.StreamOf("away-0"), "edge.*", want) }); err != nil {
		return err
	}
	ours := time.Since(start)
	start = time.Now()
	hraw, err := hjs.UpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"hubraw.>"}, Storage: jetstream.FileStorage, Duplicates: window,
		Sources: []*jetstream.StreamSource{{Name: "RAW", External: &jetstream.ExternalStream{APIPrefix: "$JS.edge.API"}}}})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Minute, func() error { return holds(ctx, hraw, "raw.>", want) }); err != nil {
		return err
	}
	base := time.Since(start)
	group := fmt.Sprintf("Edge → hub over a leafnode link (loopback), %d entries of %d B in %d sessions", n, cfg.PayloadBytes, sessions)
	r.add(Row{Group: group, Name: "catch-up of what the edge wrote offline, both ways linked", Ours: float64(want) / ours.Seconds(), Base: float64(want) / base.Seconds(),
		Unit: "msgs/s", BaseName: "raw JetStream sourcing of the same messages", HigherIsBetter: true})
	// What came back: copies, if any outlasted the window.
	time.Sleep(2 * time.Second)
	atHub, _ := subjectCount(ctx, hb.StreamOf("away-0"), "edge.>")
	atEdge, _ := subjectCount(ctx, eb.StreamOf("away-0"), "edge.>")
	r.note("edges: %d messages caught up in %v (raw sourcing: %v); 2 s later the hub holds %d messages, the edge %d",
		want, ours.Round(time.Millisecond), base.Round(time.Millisecond), atHub, atEdge)

	// Online, on streams of the default duplicate window: an append
	// acknowledged on the edge, until the hub has it.
	live := func(origin string) func(*stream.Config) {
		return func(c *stream.Config) {
			c.Stream, c.Prefix, c.Origin, c.Edge = "LIVE", "live", origin, origin == "edge"
		}
	}
	if eb, err = edge.backend(ctx, live("edge")); err != nil {
		return err
	}
	if hb, err = hub.backend(ctx, live("hub")); err != nil {
		return err
	}
	if _, err := hb.SourceFrom(ctx, "edge", eb.Config().Streams()); err != nil {
		return err
	}
	if _, err := eb.SourceFrom(ctx, "hub", hb.Config().Streams()); err != nil {
		return err
	}
	p.say("edges: online lag, %d appends", cfg.Ops)
	st, err := eb.CreateStore(ctx, header("online"))
	if err != nil {
		return err
	}
	defer st.Close(ctx)
	hs := hb.StreamOf("online")
	var lags latencies
	parent := ""
	for i := range cfg.Ops {
		m := msg
		e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", i+1), ParentID: parent, Timestamp: "2026-01-01T00:00:00.000Z", Message: &m}
		if err := st.Append(ctx, e); err != nil {
			return err
		}
		t0 := time.Now()
		if err := waitFor(ctx, time.Minute, func() error {
			got, err := hs.GetLastMsgForSubject(ctx, "live.online")
			if err != nil || lastID(got) != e.ID {
				return fmt.Errorf("not yet")
			}
			return nil
		}); err != nil {
			return err
		}
		lags = append(lags, time.Since(t0))
		parent = e.ID
	}
	slices.Sort(lags)
	r.add(Row{Group: group, Name: "online lag, edge append acknowledged → at the hub: p50", Ours: millis(lags.pct(50)), Unit: "ms"})
	r.add(Row{Group: group, Name: "online lag: p99", Ours: millis(lags.pct(99)), Unit: "ms"})
	return nil
}

// window is the duplicate window of the catch-up's streams, longer than
// the catch-up.
const window = 20 * time.Minute

// lastID is the entry id a message's id ends with (<session>:<n>:<id>).
func lastID(m *jetstream.RawStreamMsg) string {
	id := m.Header.Get(jetstream.MsgIDHeader)
	return id[strings.LastIndexByte(id, ':')+1:]
}

// subjectCount is how many messages of s match filter.
func subjectCount(ctx context.Context, s jetstream.Stream, filter string) (uint64, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// holds reports whether s has at least want messages matching filter.
func holds(ctx context.Context, s jetstream.Stream, filter string, want uint64) error {
	got, err := subjectCount(ctx, s, filter)
	if err != nil {
		return err
	}
	if got < want {
		return fmt.Errorf("bench: %d of %d messages", got, want)
	}
	return nil
}

// copyMessages publishes the first n messages of src to dst's subjects
// (raw.<subject>), with their message ids.
func copyMessages(ctx context.Context, nc *nats.Conn, src, dst jetstream.Stream, n uint64) error {
	js, _ := jetstream.New(nc)
	for seq := uint64(1); seq <= n; seq++ {
		m, err := src.GetMsg(ctx, seq)
		if err != nil {
			return err
		}
		out := nats.NewMsg("raw." + m.Subject)
		out.Data = m.Data
		out.Header.Set(jetstream.MsgIDHeader, m.Header.Get(jetstream.MsgIDHeader))
		if _, err := js.PublishMsgAsync(out); err != nil {
			return err
		}
		if seq%1000 == 0 {
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitFor calls check until it passes or within passes (the module's
// one wait, await.Until, every millisecond), and returns check's last
// error then.
func waitFor(ctx context.Context, within time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	err := await.Until(ctx, await.Poll{First: time.Millisecond, Most: time.Millisecond}, nil, func() (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
