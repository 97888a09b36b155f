package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"gopkg.in/yaml.v3"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// metricName is a Prometheus metric of sessionlog's, or one of its labels,
// as queries name them.
var metricName = regexp.MustCompile(`\bsessionlog_[a-z0-9_]+`)

// The Grafana dashboard and the alert rules in deploy/ name only metrics
// a running node exports: a node is started with -metrics, given the work
// the panels show (appends, a failed request, a search), and every name
// is looked for on its /metrics.
func TestDashboardAndAlertsNameMetricsANodeExports(t *testing.T) {
	dashboard, err := os.ReadFile("../../deploy/grafana/sessionlog.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title, Type string
			Targets     []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(dashboard, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	rules, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var alerts struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr, For string
				Labels           map[string]string
				Annotations      map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(rules, &alerts); err != nil {
		t.Fatalf("alerts: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	nrules := 0
	for _, g := range alerts.Groups {
		for _, r := range g.Rules {
			nrules++
			if r.Alert == "" || r.Expr == "" || r.For == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v lacks alert, expr, for, a severity or a summary", r)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) < 20 || nrules < 8 {
		t.Fatalf("%d queries, %d rules", len(exprs), nrules)
	}

	// A node, and the work its panels show.
	data := t.TempDir()
	metrics := fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	serveFor(t, data, "-http", "", "-metrics", metrics)
	nc := connectServe(t, data)
	ctx := t.Context()
	c := slapi.NewClient(nc, "sessionlog.v1")
	call := func(op string, req any) error { return c.Call(ctx, op, req, nil) }
	if err := call(slapi.OpCreate, slapi.CreateRequest{ID: "dash"}); err != nil {
		t.Fatal(err)
	}
	hi := jsontext.Value(`{"type":"message","message":{"role":"user","content":"hello dashboards"}}`)
	if err := call(slapi.OpAppend, slapi.AppendRequest{Session: "dash", Entries: []jsontext.Value{hi}}); err != nil {
		t.Fatal(err)
	}
	if err := call(slapi.OpAppend, slapi.AppendRequest{Session: "nope", Entries: []jsontext.Value{hi}}); err == nil {
		t.Fatal("an append to a missing session succeeded")
	}
	_ = call(slapi.OpSearch, slapi.SearchRequest{Query: "hello"})

	var scraped string
	sessiontest.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		scraped = string(b)
		if !strings.Contains(scraped, "sessionlog_append_duration_seconds_bucket") {
			return fmt.Errorf("no append on /metrics yet")
		}
		return nil
	})
	// Metrics and their labels (sessionlog_op, sessionlog_outcome …):
	// queries name both.
	exported := map[string]bool{}
	for _, line := range strings.Split(scraped, "\n") {
		if !strings.HasPrefix(line, "#") {
			for _, name := range metricName.FindAllString(line, -1) {
				exported[name] = true
			}
		}
	}
	named := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			named[n] = true
		}
	}
	for n := range named {
		if !exported[n] {
			t.Errorf("%s is named by the dashboard or the alerts but not on /metrics", n)
		}
	}
	if len(named) < 12 {
		t.Errorf("only %d metrics named", len(named))
	}
}
