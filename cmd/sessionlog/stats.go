package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/agentcore/sessionlog/session"
)

func runStats(ctx context.Context, e env) error {
	return sessionVerb(ctx, e, "stats", nil, func(sess *session.Session) error { return printStats(ctx, e, sess) })
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
	fmt.Fprintf(w, "cost         $%.4f\n", u.Cost.Total)
	return nil
}
