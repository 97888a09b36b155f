package bench

import (
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/stream"
)

//go:embed langgraph_bench.mjs
var langGraphBench []byte

// The packages the LangGraph part installs beside the client: the saver
// LangGraph recommends for production and its driver.
var langGraphBenchPackages = []string{
	"@langchain/langgraph-checkpoint@1.2.2", "@langchain/core@1.4.0",
	"@langchain/langgraph-checkpoint-postgres@1.0.5",
}

// langGraphPart times SessionlogSaver (over the gateway, on a node that
// fsyncs every write) against LangGraph's PostgresSaver on a PostgreSQL of
// the run's own (its defaults: fsync and synchronous commit on), in the
// same run: put, getTuple and list p50 on a thread that grows to
// LangGraphOps checkpoints. Skipped, with a note, without node, npm,
// PostgreSQL or the registry.
func langGraphPart(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	app := installApp(ctx, cfg, dir, "langgraph", langGraphBench, r, p, langGraphBenchPackages...)
	if app == nil {
		return nil
	}
	pg, err := startPostgres(ctx)
	if err != nil {
		r.note("langgraph: %v; the LangGraph savers were not timed", err)
		return nil
	}
	defer pg.stop()
	n, _, gw, stopOne, err := startGateway(ctx, filepath.Join(dir, "langgraph"))
	if err != nil {
		return err
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopOne()
		}
	}
	defer stop()
	run := func(kind, where string) (map[string][2]float64, error) {
		p.say("langgraph: %s, %d checkpoints", kind, cfg.LangGraphOps)
		var res map[string][2]float64
		return res, app.run(ctx, &res, kind, where, fmt.Sprint(cfg.LangGraphOps))
	}
	pgRes, err := run("postgres", pg.url)
	if err != nil {
		return err
	}
	base := "PostgresSaver on PostgreSQL (loopback), same run"
	report := func(name string, ours map[string][2]float64) {
		group := fmt.Sprintf("LangGraph savers, a thread of %d checkpoints, one call at a time: SessionlogSaver %s", cfg.LangGraphOps, name)
		for _, op := range []string{"put", "getTuple", "list"} {
			for i, q := range []string{"p50", "p99"} {
				row := Row{Group: group, Name: fmt.Sprintf("%s %s", op, q), Ours: ours[op][i], Base: pgRes[op][i], Unit: "ms", BaseName: base}
				if q == "p50" {
					row.Goal, row.Met = "≤ 1.0x", ours[op][i] <= pgRes[op][i]
				}
				r.add(row)
			}
		}
		if read, ok := ours["read"]; ok {
			r.add(Row{Group: group, Name: "getTuple p50, against its floor", Ours: ours["getTuple"][0], Base: read[0], Unit: "ms",
				BaseName: "the client reading the thread's last entry linearizably (a read barrier on a cluster; none on a server alone), same run"})
		}
	}
	for _, via := range []struct{ kind, name, url string }{
		{"sessionlog-nats", "over NATS", n.n.ClientURL()},
		{"sessionlog", "over HTTP (the gateway)", gw.URL()},
	} {
		ours, err := run(via.kind, via.url)
		if err != nil {
			return err
		}
		report(via.name, ours)
	}
	stop()
	// Three nodes on loopback, the stream replicated on all three: each
	// write waits for a quorum of two.
	cfgs, err := cluster.LocalConfigs(filepath.Join(dir, "langgraph-r3"), 3)
	if err != nil {
		return err
	}
	p.say("langgraph: a three-node cluster")
	nodes, err := cluster.StartAll(ctx, cfgs)
	if err != nil {
		return err
	}
	defer func() {
		for _, cn := range nodes {
			cn.Close(context.WithoutCancel(ctx))
		}
	}()
	nc, err := nodes[0].Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	_, _, stopR3, err := serveOn(ctx, &node{n: nodes[0], nc: nc}, func(c *stream.Config) { c.Replicas = 3 })
	if err != nil {
		return err
	}
	defer stopR3()
	ours, err := run("sessionlog-nats", nodes[0].ClientURL())
	if err != nil {
		return err
	}
	report("over NATS, three nodes, three replicas", ours)
	return nil
}

func lookPath(name string) string {
	p, _ := exec.LookPath(name)
	return p
}

// lastLine is the last non-empty line of a program's output.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
