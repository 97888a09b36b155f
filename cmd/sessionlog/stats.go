package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/agentcore/sessionlog/session"
)

func runStats(ctx context.Context, e env) error {
	var asJSON *bool
	flags := func(fs *flag.FlagSet) { asJSON = fs.Bool("json", false, "print the statistics as JSON") }
	return sessionVerb(ctx, e, "stats", flags, func(sess *session.Session) error {
		if *asJSON {
			st, err := sess.Stats(ctx)
			if err != nil {
				return err
			}
			return printStatsJSON(e.stdout, st)
		}
		return printStats(ctx, e, sess)
	})
}

// printStatsJSON writes the statistics with the keys the service's stats
// operation uses.
func printStatsJSON(w io.Writer, st session.Stats) error {
	byType := map[string]int{}
	for t, n := range st.ByType {
		byType[string(t)] = n
	}
	u := st.Usage
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{
		"entries": st.Entries, "byType": byType, "messages": st.Messages, "byRole": st.ByRole, "toolCalls": st.ToolCalls,
		"compactions": st.Compactions, "branchSummaries": st.BranchSummaries, "redactions": st.Redactions,
		"usage": map[string]any{"input": u.Input, "output": u.Output, "cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite, "totalTokens": u.TotalTokens, "cost": u.Cost.Total, "derivedTotals": st.DerivedTotals},
	})
}

func printStats(ctx context.Context, e env, sess *session.Session) error {
	st, err := sess.Stats(ctx)
	if err != nil {
		return err
	}
	w := e.stdout
	fmt.Fprintf(w, "entries      %d\n", st.Entries)
	fmt.Fprintf(w, "messages     %d\n", st.Messages)
	roles := make([]string, 0, len(st.ByRole))
	for r := range st.ByRole {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		fmt.Fprintf(w, "  %-10s %d\n", r, st.ByRole[r])
	}
	fmt.Fprintf(w, "tool calls   %d\n", st.ToolCalls)
	fmt.Fprintf(w, "compactions  %d\n", st.Compactions)
	if st.Redactions > 0 {
		fmt.Fprintf(w, "redactions   %d (secrets replaced on write)\n", st.Redactions)
	}
	u := st.Usage
	fmt.Fprintf(w, "tokens       input %d, output %d, cache read %d, cache write %d, total %d\n",
		u.Input, u.Output, u.CacheRead, u.CacheWrite, u.TotalTokens)
	if st.DerivedTotals > 0 {
		fmt.Fprintf(w, "             (the total of %d usages is the sum of their parts: their writer recorded none)\n", st.DerivedTotals)
	}
	fmt.Fprintf(w, "cost         $%.4f\n", u.Cost.Total)
	return nil
}
