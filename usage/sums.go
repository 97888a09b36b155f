package usage

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

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

// Counted are the calls a whole session's entries, in the order written,
// record, each once (see Ledger): where a later line of an API message
// replaces an earlier one, the later takes the earlier's place.
func Counted(entries []*session.Entry) []Call {
	var r Reader
	var l Ledger
	var out []Call
	at := map[string][]int{} // a key's calls in out
	for _, e := range entries {
		for _, c := range r.Calls(e) {
			counted, old, replaced := l.Add(c)
			switch {
			case replaced:
				for _, i := range at[old.Key] {
					if out[i] == old {
						out[i] = c
						break
					}
				}
			case counted:
				if c.Key != "" {
					at[c.Key] = append(at[c.Key], len(out))
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// Session is what a whole session's entries consumed, priced by t.
func Session(entries []*session.Entry, t *Table) api.UsageSums {
	var sums api.UsageSums
	for _, c := range Counted(entries) {
		sums.Add(t.Sums(c))
	}
	return sums
}

// DaySums is one day and model's usage in a session.
type DaySums struct {
	Day, Model string // UTC day; provider/model
	api.UsageSums
}

// ByDay is a session's usage by day and model, days oldest first, at
// most max rows (cut says more were left out).
func ByDay(calls []Call, t *Table, max int) (rows []DaySums, cut bool) {
	index := map[[2]string]int{}
	for _, c := range calls {
		day := ""
		if !c.At.IsZero() {
			day = c.At.UTC().Format(time.DateOnly)
		}
		k := [2]string{day, c.Name()}
		i, ok := index[k]
		if !ok {
			if len(rows) == max {
				cut = true
				continue
			}
			i = len(rows)
			index[k] = i
			rows = append(rows, DaySums{Day: day, Model: k[1]})
		}
		rows[i].Add(t.Sums(c))
	}
	sortDays(rows)
	return rows, cut
}

// Read gives a session's entries in the order written, for reading its
// usage: its tree's, as stored, where its store keeps one (no content
// is fetched), else the store's. The one function here that asks a store.
func Read(ctx context.Context, st session.Store) ([]*session.Entry, error) {
	if th, ok := st.(session.TreeHolder); ok {
		var es []*session.Entry
		err := th.ReadTree(ctx, func(t *session.Tree) (err error) {
			es, err = t.Entries()
			return err
		})
		return es, err
	}
	return st.Entries(ctx)
}

func sortDays(rows []DaySums) {
	slices.SortFunc(rows, func(a, b DaySums) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), strings.Compare(a.Model, b.Model))
	})
}
