package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/stream"
)

func runUsage(ctx context.Context, e env) error {
	fs := newFlags("usage", e)
	rf := addRepoFlags(fs)
	var req slapi.UsageRequest
	by := fs.String("by", "day,model", "group by these, comma separated: "+strings.Join(slapi.UsageDimensions, ", ")+` ("" for the total alone)`)
	fs.StringVar(&req.Since, "since", "", "from this day (2026-01-02, UTC; or an RFC 3339 time's day)")
	fs.StringVar(&req.Until, "until", "", "to this day, included")
	fs.StringVar(&req.Model, "model", "", "calls of this provider/model (or model name) only")
	fs.StringVar(&req.Project, "project", "", "sessions working in this directory or under it")
	fs.StringVar(&req.Agent, "agent", "", "sessions of this agent: pi, claude-code, codex, langgraph, openai-agents")
	fs.StringVar(&req.Session, "session", "", "this session only")
	fs.IntVar(&req.Limit, "limit", 0, fmt.Sprintf("rows to print (at most %d; the total counts all)", slapi.MaxUsageRows))
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if _, err := parseArgs(fs, e.args, 0, ""); err != nil {
		return err
	}
	if rf.files != "" {
		return usageError("usage is kept with the search index of a JetStream store, not -files")
	}
	req.By = []string{}
	if *by != "" {
		req.By = strings.Split(*by, ",")
	}
	if _, _, _, err := req.Checked(); err != nil {
		return usageError("%v", err)
	}
	repo, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer repo.close(context.WithoutCancel(ctx))
	var rep slapi.UsageReport
	if repo.embedded {
		b, ok := repo.Repo.(*stream.Backend)
		if !ok {
			return errors.New("usage needs a JetStream store")
		}
		err = withIndexHere(ctx, repo, b, func(x *search.Index) (err error) {
			rep, err = x.Usage(ctx, req)
			return err
		})
	} else {
		// A serve keeps the usage with its index: ask its service.
		err = slapi.NewClient(repo.nc, service.DefaultConfig(sysConfig()).Subject).Call(ctx, slapi.OpUsage, req, &rep)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printUsage(e, rep)
	return nil
}

// printUsage prints a report as a table: the dimensions asked for, then
// the sums, and a total line.
func printUsage(e env, rep slapi.UsageReport) {
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, d := range rep.By {
		head = append(head, strings.ToUpper(d))
	}
	head = append(head, "TURNS", "CALLS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOKENS", "COST", "TOKENS/TURN", "COST/TURN")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	line := func(keys []string, r slapi.UsageRow) {
		cost, perTurn := "$"+money(r.Cost), "$"+money(r.CostPerTurn)
		if r.UnpricedCalls > 0 {
			// Calls of a model without a price: the cost is known in part.
			cost, perTurn = cost+" + ?", "?"
			if r.Cost == 0 {
				cost = "?"
			}
		}
		cols := append(keys, thousands(r.Turns), thousands(r.Calls), thousands(r.Input), thousands(r.Output), thousands(r.CacheRead),
			thousands(r.CacheWrite), thousands(r.Tokens), cost, thousands(int64(math.Round(r.TokensPerTurn))), perTurn)
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	for _, r := range rep.Rows {
		var keys []string
		for _, d := range rep.By {
			keys = append(keys, cellText(r.Of(d)))
		}
		line(keys, r)
	}
	keys := make([]string, len(rep.By))
	if len(keys) > 0 {
		keys[0] = "TOTAL"
	}
	line(keys, rep.Total)
	tw.Flush()
	cut := ""
	if rep.Cut {
		cut = fmt.Sprintf(" (%d rows of %d shown: -limit)", len(rep.Rows), rep.Groups)
	}
	fmt.Fprintf(e.stderr, "%d session(s)%s\n", rep.Sessions, cut)
	if t := rep.Total; t.UnpricedCalls > 0 {
		fmt.Fprintf(e.stderr, "? %s calls (%s tokens) of models without a price are not in the cost: `sessionlog prices -model NAME` tells, prices.json gives one\n",
			thousands(t.UnpricedCalls), thousands(t.UnpricedTokens))
	}
}

// cellText is a value as a table shows it: one line, "-" for none.
func cellText(v string) string {
	if v == "" {
		return "-"
	}
	return outline.OneLine(v, 80)
}
