package usage

import (
	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
)

// Sums is what c adds to a report's sums, priced by t.
func (t *Table) Sums(c Call) api.UsageSums {
	s := api.UsageSums{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Tokens: c.Tokens()}
	if c.Turn {
		s.Turns = 1
	} else {
		s.Calls = 1
	}
	if cost, ok := t.Cost(c); ok {
		s.Cost = cost
	} else {
		s.UnpricedCalls, s.UnpricedTokens = 1, s.Tokens
	}
	return s
}

// Session is what a whole session's entries, in the order written,
// consumed: every call once (see Ledger), priced by t.
func Session(entries []*session.Entry, t *Table) api.UsageSums {
	var r Reader
	var l Ledger
	var sums api.UsageSums
	for _, e := range entries {
		for _, c := range r.Calls(e) {
			counted, old, replaced := l.Add(c)
			if replaced {
				sums.Sub(t.Sums(old))
			}
			if counted {
				sums.Add(t.Sums(c))
			}
		}
	}
	return sums
}
