package bench

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"

	"github.com/agentcore/sessionlog/internal/peers"
)

//go:embed aisdk_bench.mjs
var aiSDKBench []byte

//go:embed adk_bench.mjs
var adkBench []byte

// aiSDKPart times resumable streams on sessionlog's generations against
// resumable-stream on a Redis of the run's own (Debian's redis-server, no
// persistence, as its docs deploy it): a resuming reader's time to its
// first chunk, and chunks a second from writer to reader.
func aiSDKPart(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	app := installApp(ctx, cfg, dir, "aisdk", aiSDKBench, r, p, "ai@7.0.173", "resumable-stream@2.2.13", "redis@6.3.1")
	if app == nil {
		return nil
	}
	redis, err := peers.StartRedis(ctx, dir)
	if err != nil {
		r.note("aisdk: %v; resumable streams were not timed", err)
		return nil
	}
	defer redis.Stop()
	n, _, _, stop, err := startGateway(ctx, filepath.Join(dir, "aisdk"))
	if err != nil {
		return err
	}
	defer stop()
	type result struct {
		TTFB            [2]float64 `json:"ttfb"`
		ChunksPerSecond float64    `json:"chunksPerSecond"`
		BytesPerSecond  float64    `json:"bytesPerSecond"`
	}
	var base, ours result
	resumes, chunks := fmt.Sprint(cfg.StreamResumes), fmt.Sprint(cfg.StreamChunks)
	p.say("aisdk: resumable-stream on Redis, %d resumes, %d chunks", cfg.StreamResumes, cfg.StreamChunks)
	if err := app.run(ctx, &base, "redis", redis.URL, resumes, chunks); err != nil {
		return err
	}
	p.say("aisdk: sessionlog's generations over NATS")
	if err := app.run(ctx, &ours, "sessionlog", n.n.ClientURL(), resumes, chunks); err != nil {
		return err
	}
	group := fmt.Sprintf("Resumable streams (AI SDK): sessionlog's generations (fsync always, over NATS) against resumable-stream 2.2.13 on Redis, %d chunks of a UI message stream", cfg.StreamChunks)
	baseName := "resumable-stream on redis-server (loopback, no persistence), same run"
	r.add(Row{Group: group, Name: "a resuming reader's first chunk, p50", Ours: ours.TTFB[0], Base: base.TTFB[0], Unit: "ms", BaseName: baseName})
	r.add(Row{Group: group, Name: "a resuming reader's first chunk, p99", Ours: ours.TTFB[1], Base: base.TTFB[1], Unit: "ms", BaseName: baseName})
	r.add(Row{Group: group, Name: "chunks a second, writer to reader", Ours: ours.ChunksPerSecond, Base: base.ChunksPerSecond, Unit: "chunks/s", BaseName: baseName, HigherIsBetter: true,
		Goal: "≥ 1.0x", Met: ours.ChunksPerSecond >= base.ChunksPerSecond})
	return nil
}

// adkPart times SessionlogSessionService against ADK's
// DatabaseSessionService on a PostgreSQL of the run's own and against
// its InMemorySessionService: listing ADKSessions sessions of a user and
// loading a session of ADKEvents events.
func adkPart(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	app := installApp(ctx, cfg, dir, "adk", adkBench, r, p, "@google/adk@2.0.0", "@mikro-orm/postgresql@6.6.16")
	if app == nil {
		return nil
	}
	n, _, _, stop, err := startGateway(ctx, filepath.Join(dir, "adk"))
	if err != nil {
		return err
	}
	defer stop()
	type result struct {
		List   [2]float64 `json:"list"`
		Load   [2]float64 `json:"load"`
		Create float64    `json:"create"`
		Append float64    `json:"append"`
	}
	sessions, events := fmt.Sprint(cfg.ADKSessions), fmt.Sprint(cfg.ADKEvents)
	var ours, memory result
	p.say("adk: SessionlogSessionService, %d sessions, a session of %d events", cfg.ADKSessions, cfg.ADKEvents)
	if err := app.run(ctx, &ours, "sessionlog", n.n.ClientURL(), sessions, events); err != nil {
		return err
	}
	p.say("adk: InMemorySessionService")
	if err := app.run(ctx, &memory, "memory", "-", sessions, events); err != nil {
		return err
	}
	group := fmt.Sprintf("Google ADK session services: SessionlogSessionService (fsync always, over NATS), %d sessions of a user, a session of %d events", cfg.ADKSessions, cfg.ADKEvents)
	add := func(base result, baseName string) {
		r.add(Row{Group: group, Name: "listSessions, p50", Ours: ours.List[0], Base: base.List[0], Unit: "ms", BaseName: baseName, Goal: "≤ 50 ms", Met: ours.List[0] <= 50})
		r.add(Row{Group: group, Name: "listSessions, p99", Ours: ours.List[1], Base: base.List[1], Unit: "ms", BaseName: baseName})
		r.add(Row{Group: group, Name: "getSession, p50", Ours: ours.Load[0], Base: base.Load[0], Unit: "ms", BaseName: baseName, Goal: "≤ 100 ms", Met: ours.Load[0] <= 100})
		r.add(Row{Group: group, Name: "getSession, p99", Ours: ours.Load[1], Base: base.Load[1], Unit: "ms", BaseName: baseName})
		r.add(Row{Group: group, Name: "appendEvent, all of them", Ours: ours.Append, Base: base.Append, Unit: "s", BaseName: baseName})
	}
	pg, err := startPostgres(ctx)
	if err != nil {
		r.note("adk: %v; ADK's DatabaseSessionService was not timed", err)
	} else {
		defer pg.stop()
		var db result
		p.say("adk: DatabaseSessionService on PostgreSQL")
		if err := app.run(ctx, &db, "database", pg.url, sessions, events); err != nil {
			return err
		}
		add(db, "ADK's DatabaseSessionService on PostgreSQL (loopback), same run")
	}
	add(memory, "ADK's InMemorySessionService, same run")
	return nil
}
