package search

import (
	"context"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/agentcore/sessionlog/api"
)

// Usage sums the usage of the sessions indexed, as req asks: grouped by
// its dimensions, narrowed by its filters (see api.UsageRequest).
func (x *Index) Usage(ctx context.Context, req api.UsageRequest) (api.UsageReport, error) {
	req, since, until, err := req.Checked()
	if err != nil {
		return api.UsageReport{}, err
	}
	if err := ctx.Err(); err != nil {
		return api.UsageReport{}, err
	}
	rep := api.UsageReport{By: req.By, Rows: []api.UsageRow{}}
	// Groups are found by a hash of their values of the dimensions asked
	// for (a map keyed by the strings themselves costs several times
	// more, cell by cell), checked against the group's own values.
	seed := maphash.MakeSeed()
	groups := map[uint64]int{} // a hash's first row, +1; next chains the rest
	var next []int
	dims := make([]int, len(req.By)) // the dimensions as positions in key
	for i, d := range req.By {
		dims[i] = slices.Index(api.UsageDimensions, d)
	}
	// A report by project, agent or session only adds up each session's
	// cells first, and looks its group up once.
	perCell := slices.ContainsFunc(dims, func(i int) bool { return i <= 2 })
	var key [6]string
	groupOf := func(c *usageCell, su *sessionUsage, id string) *api.UsageRow {
		var h uint64
		for _, i := range dims {
			var v string
			switch i {
			case 0:
				v = c.Day
			case 1:
				v = c.Day[:min(7, len(c.Day))]
			case 2:
				v = c.Model
			case 3:
				v = su.Cwd
			case 4:
				v = su.Agent
			case 5:
				v = id
			}
			key[i] = v
			h = h*0x9E3779B97F4A7C15 + maphash.String(seed, v)
		}
		for g := groups[h]; g > 0; g = next[g-1] {
			if r := &rep.Rows[g-1]; r.Day == key[0] && r.Month == key[1] && r.Model == key[2] && r.Project == key[3] && r.Agent == key[4] && r.Session == key[5] {
				return r
			}
		}
		rep.Rows = append(rep.Rows, api.UsageRow{Day: key[0], Month: key[1], Model: key[2], Project: key[3], Agent: key[4], Session: key[5]})
		next = append(next, groups[h])
		groups[h] = len(rep.Rows)
		return &rep.Rows[len(rep.Rows)-1]
	}
	err = x.read(func() error {
		x.usages.mu.RLock()
		defer x.usages.mu.RUnlock()
		if slices.Contains(dims, 5) {
			rep.Rows = make([]api.UsageRow, 0, len(x.usages.sessions))
		}
		for id, su := range x.usages.sessions {
			if (req.Session != "" && id != req.Session) || (req.Agent != "" && su.Agent != req.Agent) ||
				(req.Project != "" && !underDir(su.Cwd, req.Project)) {
				continue
			}
			if !perCell && since == "" && until == "" && req.Model == "" {
				// Every cell counts: the session's total says it.
				if len(su.Cells) > 0 {
					rep.Sessions++
					groupOf(nil, su, id).Add(su.total)
				}
				continue
			}
			counted := false
			var sum api.UsageSums
			for i := range su.Cells {
				c := &su.Cells[i]
				if (since != "" && c.Day < since) || (until != "" && c.Day > until) || (req.Model != "" && !modelIs(c.Model, req.Model)) {
					continue
				}
				counted = true
				if perCell {
					groupOf(c, su, id).Add(c.UsageSums)
				} else {
					sum.Add(c.UsageSums)
				}
			}
			if !counted {
				continue
			}
			rep.Sessions++
			if !perCell {
				groupOf(nil, su, id).Add(sum)
			}
		}
		return nil
	})
	if err != nil {
		return api.UsageReport{}, err
	}
	slices.SortFunc(rep.Rows, func(a, b api.UsageRow) int {
		for _, d := range req.By {
			if c := strings.Compare(a.Of(d), b.Of(d)); c != 0 {
				return c
			}
		}
		return 0
	})
	// Summed in the rows' order, not the map's: the same report gives the
	// same cost to the last digit.
	for i := range rep.Rows {
		rep.Total.Add(rep.Rows[i].UsageSums)
	}
	rep.Groups = len(rep.Rows)
	if len(rep.Rows) > req.Limit {
		rep.Rows, rep.Cut = rep.Rows[:req.Limit], true
	}
	for i := range rep.Rows {
		perTurn(&rep.Rows[i])
	}
	perTurn(&rep.Total)
	return rep, nil
}

func perTurn(r *api.UsageRow) {
	if n := r.Turns + r.Calls; n > 0 {
		r.TokensPerTurn, r.CostPerTurn = float64(r.Tokens)/float64(n), r.Cost/float64(n)
	}
}

// modelIs tells whether a cell's provider/model is the model asked for:
// the same provider/model, or the same model name.
func modelIs(cell, asked string) bool {
	if cell == asked {
		return true
	}
	_, name, ok := strings.Cut(cell, "/")
	return ok && name == asked
}

// SessionUsage is what one session's model calls consumed, as a report
// counts it; ok is false for a session the index holds no usage of.
func (x *Index) SessionUsage(id string) (sums api.UsageSums, ok bool) {
	x.usages.mu.RLock()
	defer x.usages.mu.RUnlock()
	su := x.usages.sessions[id]
	if su == nil {
		return api.UsageSums{}, false
	}
	return su.total, true
}
