package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

//go:embed clients_bench.py
var pyBench []byte

//go:embed clients_bench.mjs
var tsBench []byte

// clientsPart times the Python and TypeScript clients (over the HTTP
// gateway) against the Go service client (over NATS), each appending a
// user message and reading the context, one call at a time, on the same
// node in the same run. Each client is skipped, with a note, when its
// toolchain or the clients directory is missing.
func clientsPart(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	n, scfg, gw, stop, err := startGateway(ctx, filepath.Join(dir, "clients"))
	if err != nil {
		return err
	}
	defer stop()

	ops := cfg.ClientOps
	p.say("clients: the Go service client, %d appends and contexts", ops)
	goc := api.NewClient(n.nc, scfg.Subject)
	if err := goc.Call(ctx, api.OpCreate, api.CreateRequest{ID: "gobench"}, nil); err != nil {
		return err
	}
	entry := jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + strings.Repeat("x", 900) + `","timestamp":1}}`)
	var appends, contexts latencies
	for range ops {
		t0 := time.Now()
		if err := goc.Call(ctx, api.OpAppend, api.AppendRequest{Session: "gobench", Entries: []jsontext.Value{entry}}, nil); err != nil {
			return err
		}
		appends = append(appends, time.Since(t0))
	}
	for range ops {
		t0 := time.Now()
		if err := goc.Call(ctx, api.OpContext, api.ContextRequest{Session: "gobench"}, nil); err != nil {
			return err
		}
		contexts = append(contexts, time.Since(t0))
	}
	goAppend, goContext := millis(appends.pct(50)), millis(contexts.pct(50))
	goHTTP, err := goOverHTTP(ctx, gw.URL(), entry, ops)
	if err != nil {
		return err
	}

	run := func(name string, args ...string) (map[string]float64, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(cfg.ClientsDir, "python", "src"))
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var res map[string]float64
		return res, json.Unmarshal(out, &res)
	}
	group := fmt.Sprintf("Clients, one call at a time (%d each), fsync %s", ops, n.sync)
	add := func(lang string, res map[string]float64) {
		base := "Go service client over NATS, same run"
		r.add(Row{Group: group, Name: lang + " client: append p50", Ours: res["append"], Base: goAppend, Unit: "ms", BaseName: base, Goal: "≤ 1.3x", Met: res["append"] <= 1.3*goAppend})
		r.add(Row{Group: group, Name: lang + " client: context p50", Ours: res["context"], Base: goContext, Unit: "ms", BaseName: base, Goal: "≤ 1.3x", Met: res["context"] <= 1.3*goContext})
	}
	scripts := filepath.Join(dir, "client-bench")
	if err := os.MkdirAll(scripts, 0o700); err != nil {
		return err
	}
	py, ts := filepath.Join(scripts, "clients_bench.py"), filepath.Join(scripts, "clients_bench.mjs")
	os.WriteFile(py, pyBench, 0o600)
	os.WriteFile(ts, tsBench, 0o600)
	if python := pythonWithHTTPX(); python == "" {
		r.note("clients: no python3 with httpx, the Python client was not timed")
	} else if _, err := os.Stat(filepath.Join(cfg.ClientsDir, "python")); err != nil {
		r.note("clients: no %s/python (run from the repository's root, or set the clients dir), the Python client was not timed", cfg.ClientsDir)
	} else {
		p.say("clients: Python")
		res, err := run("python", python, py, gw.URL(), fmt.Sprint(ops))
		if err != nil {
			r.note("clients: the Python client was not timed: %v (it needs httpx)", err)
		} else {
			add("Python (HTTP)", res)
		}
	}
	if node, err := exec.LookPath("node"); err != nil {
		r.note("clients: no node, the TypeScript client was not timed")
	} else {
		p.say("clients: TypeScript")
		abs, _ := filepath.Abs(filepath.Join(cfg.ClientsDir, "typescript"))
		res, err := run("typescript", node, ts, abs, gw.URL(), fmt.Sprint(ops))
		if err != nil {
			r.note("clients: the TypeScript client was not timed: %v", err)
		} else {
			add("TypeScript (HTTP)", res)
			// The same append as a bare node:http POST: what no client in
			// Node goes under (same run), and what Node's HTTP costs by
			// itself against Go's.
			r.add(Row{Group: group, Name: "a bare node:http POST of the same append (the floor of a Node client)", Ours: res["bareAppend"], Base: goAppend, Unit: "ms",
				BaseName: "Go service client over NATS, same run"})
			r.add(Row{Group: group, Name: "TypeScript (HTTP) client: append p50 over the bare POST", Ours: res["append"], Base: res["bareAppend"], Unit: "ms",
				BaseName: "the bare node:http POST of the append"})
			r.add(Row{Group: group, Name: "Go's net/http: the same append", Ours: goHTTP.append, Base: goAppend, Unit: "ms",
				BaseName: "Go service client over NATS, same run"})
			r.add(Row{Group: group, Name: "node:http: a POST to a route that does nothing", Ours: res["bare"], Base: goHTTP.bare, Unit: "ms",
				BaseName: "the same from Go's net/http"})
		}
		if _, err := os.Stat(filepath.Join(abs, "node_modules", "@nats-io", "transport-node")); err != nil {
			r.note("clients: the TypeScript client over NATS was not timed: npm install in %s first", abs)
		} else if res, err := run("typescript", node, ts, abs, n.n.ClientURL(), fmt.Sprint(ops), "nats"); err != nil {
			r.note("clients: the TypeScript client over NATS was not timed: %v", err)
		} else {
			add("TypeScript (NATS)", res)
		}
	}
	return nil
}

// pythonWithHTTPX is a python3 that can import httpx, or "".
func pythonWithHTTPX() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import httpx").Run() == nil {
			return path
		}
	}
	return ""
}

// startGateway starts a node with a listener, the service on it (no rate
// limit) and the HTTP gateway in front: what clients of other languages
// reach. stop closes all three.
func startGateway(ctx context.Context, dir string, opts ...serveOption) (*node, service.Config, *gateway.Gateway, func(), error) {
	n, err := startNodeWith(ctx, dir, func(c *cluster.Config) { c.Listen = "127.0.0.1:0" })
	if err != nil {
		return nil, service.Config{}, nil, nil, err
	}
	scfg, gw, stop, err := serveOn(ctx, n, nil, opts...)
	if err != nil {
		n.close()
		return nil, scfg, nil, nil, err
	}
	return n, scfg, gw, func() { stop(); n.close() }, nil
}

// serveOption adds to what serveOn starts.
type serveOption int

// withSearch keeps an index of the sessions, in memory, for the search
// operation.
const withSearch serveOption = 1

// serveOn starts the service (no rate limit) and the gateway on a node
// that listens, on a stream of its own shaped by tweak; stop closes both.
func serveOn(ctx context.Context, n *node, tweak func(*stream.Config), opts ...serveOption) (service.Config, *gateway.Gateway, func(), error) {
	scfg := service.DefaultConfig(system.Config())
	b, err := n.backend(ctx, tweak)
	if err != nil {
		return scfg, nil, nil, err
	}
	scfg.Limits.Rate, scfg.Limits.Burst = 1e6, 1e6
	scfg.Limits.TenantWriteBytes, scfg.Limits.TenantWriteBurst = 1<<40, 1<<40 // the engine measured, not the admission bounds
	closeSearch := func() {}
	if slices.Contains(opts, withSearch) {
		x, _, err := search.Open(search.DefaultConfig(""))
		if err != nil {
			return scfg, nil, nil, err
		}
		ix, err := search.Follow(ctx, x, b)
		if err != nil {
			x.Close()
			return scfg, nil, nil, err
		}
		scfg.Search = x
		closeSearch = func() { ix.Close(context.WithoutCancel(ctx)); x.Close() }
	}
	svc, err := service.Start(ctx, n.nc, b, scfg)
	if err != nil {
		closeSearch()
		return scfg, nil, nil, err
	}
	gcfg := gateway.DefaultConfig("127.0.0.1:0", n.n.ClientURL())
	gcfg.Stream, gcfg.Rate, gcfg.Burst = b.Config(), 1e6, 1e6
	gw, err := gateway.Start(ctx, gcfg)
	if err != nil {
		svc.Close(context.WithoutCancel(ctx))
		closeSearch()
		return scfg, nil, nil, err
	}
	stop := func() {
		gw.Close(context.WithoutCancel(ctx))
		svc.Close(context.WithoutCancel(ctx))
		closeSearch()
	}
	return scfg, gw, stop, nil
}

// httpTimes are Go's net/http p50s against the gateway: an append of the
// clients' entry, and a bare POST of the same size to a route that does
// nothing.
type httpTimes struct{ append, bare float64 }

// goOverHTTP times Go's net/http client (one kept connection) through the
// gateway at url, as the clients of other languages reach it.
func goOverHTTP(ctx context.Context, url string, entry jsontext.Value, ops int) (httpTimes, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer hc.CloseIdleConnections()
	post := func(path string, body []byte, ok int) (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err == nil && res.StatusCode != ok {
			err = fmt.Errorf("bench: POST %s: %s", path, res.Status)
		}
		return time.Since(t0), err
	}
	if _, err := post("/v1/sessions", []byte(`{"id":"gohttpbench"}`), http.StatusOK); err != nil {
		return httpTimes{}, err
	}
	body := []byte(`{"entries":[` + string(entry) + `]}`)
	var appends, bare latencies
	for range ops {
		d, err := post("/v1/sessions/gohttpbench/entries", body, http.StatusOK)
		if err != nil {
			return httpTimes{}, err
		}
		appends = append(appends, d)
	}
	for range ops {
		d, err := post("/v1/bench/nothing", body, http.StatusNotFound)
		if err != nil {
			return httpTimes{}, err
		}
		bare = append(bare, d)
	}
	return httpTimes{append: millis(appends.pct(50)), bare: millis(bare.pct(50))}, nil
}
