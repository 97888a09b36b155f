package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	slapi "github.com/agentcore/sessionlog/api"
	sluse "github.com/agentcore/sessionlog/usage"

	"github.com/agentcore/sessionlog/session"
)

func runStats(ctx context.Context, e env) error {
	var asJSON *bool
	var fset *flag.FlagSet
	flags := func(fs *flag.FlagSet) { asJSON, fset = fs.Bool("json", false, "print the statistics as JSON"), fs }
	return sessionVerb(ctx, e, "stats", flags, func(sess *session.Session) error {
		st, u, err := sessionStats(ctx, sess, fset.Lookup("data").Value.String())
		if err != nil {
			return err
		}
		if *asJSON {
			return printStatsJSON(e.stdout, st, u)
		}
		printStats(e, st, u)
		return nil
	})
}

// sessionStats are a session's statistics, and its usage as the usage
// verb and the service count it: each API call once, priced with the
// data dir's table.
func sessionStats(ctx context.Context, sess *session.Session, dataDir string) (session.Stats, slapi.UsageReply, error) {
	st, err := sess.Stats(ctx)
	if err != nil {
		return st, slapi.UsageReply{}, err
	}
	prices, err := pricesFor(dataDir, "")
	if err != nil {
		return st, slapi.UsageReply{}, err
	}
	entries, err := sluse.Read(ctx, sess.Store())
	if err != nil {
		return st, slapi.UsageReply{}, err
	}
	return st, slapi.UsageReplyOf(sluse.Session(entries, prices)), nil
}

// printStatsJSON writes the statistics with the keys the service's stats
// operation uses.
func printStatsJSON(w io.Writer, st session.Stats, u slapi.UsageReply) error {
	byType := map[string]int{}
	for t, n := range st.ByType {
		byType[string(t)] = n
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{
		"entries": st.Entries, "byType": byType, "messages": st.Messages, "byRole": st.ByRole, "toolCalls": st.ToolCalls,
		"compactions": st.Compactions, "branchSummaries": st.BranchSummaries, "redactions": st.Redactions, "usage": u,
	})
}

func printStats(e env, st session.Stats, u slapi.UsageReply) {
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
	fmt.Fprintf(w, "model calls  %s (%s replies, %s outside the conversation; each API call once)\n", thousands(u.Turns+u.Calls), thousands(u.Turns), thousands(u.Calls))
	fmt.Fprintf(w, "tokens       input %s, output %s, cache read %s, cache write %s, total %s\n",
		thousands(u.Input), thousands(u.Output), thousands(u.CacheRead), thousands(u.CacheWrite), thousands(u.TotalTokens))
	if st.DerivedTotals > 0 {
		fmt.Fprintf(w, "             (the total of %d usages is the sum of their parts: their writer recorded none)\n", st.DerivedTotals)
	}
	fmt.Fprintf(w, "cost         %s\n", costText(u.Cost, u.UnpricedCalls, u.UnpricedTokens))
}

// costText is a cost as people read it: dollars, and the part unknown
// when calls of a model without a price are in it.
func costText(cost float64, unpricedCalls, unpricedTokens int64) string {
	s := fmt.Sprintf("$%s", money(cost))
	switch {
	case unpricedCalls > 0 && cost == 0:
		return fmt.Sprintf("unknown (%s calls, %s tokens of models without a price)", thousands(unpricedCalls), thousands(unpricedTokens))
	case unpricedCalls > 0:
		return fmt.Sprintf("%s + unknown (%s calls, %s tokens of models without a price)", s, thousands(unpricedCalls), thousands(unpricedTokens))
	}
	return s
}

// thousands writes n with thousands separators (1,234,567).
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// money writes dollars with separators and cents (four places under a
// dollar, where a session's cost often is).
func money(v float64) string {
	if v != 0 && math.Abs(v) < 1 {
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	whole, frac := math.Modf(math.Abs(v))
	cents := int64(math.Round(frac * 100))
	if cents == 100 {
		whole, cents = whole+1, 0
	}
	sign := ""
	if v < 0 {
		sign = "-"
	}
	return fmt.Sprintf("%s%s.%02d", sign, thousands(int64(whole)), cents)
}
