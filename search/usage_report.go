package search

import (
	"cmp"
	"context"
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
	groups := map[[6]string]*api.UsageRow{}
	err = x.read(func() error {
		x.usages.mu.RLock()
		defer x.usages.mu.RUnlock()
		for id, su := range x.usages.sessions {
			if (req.Session != "" && id != req.Session) || (req.Agent != "" && su.Agent != req.Agent) ||
				(req.Project != "" && !underDir(su.Cwd, req.Project)) {
				continue
			}
			counted := false
			for _, c := range su.Cells {
				if (since != "" && c.Day < since) || (until != "" && c.Day > until) || (req.Model != "" && !modelIs(c.Model, req.Model)) {
					continue
				}
				counted = true
				var k [6]string
				for _, d := range req.By {
					switch d {
					case api.UsageByDay:
						k[0] = c.Day
					case api.UsageByMonth:
						k[1] = c.Day[:min(7, len(c.Day))]
					case api.UsageByModel:
						k[2] = c.Model
					case api.UsageByProject:
						k[3] = su.Cwd
					case api.UsageByAgent:
						k[4] = su.Agent
					case api.UsageBySession:
						k[5] = id
					}
				}
				row := groups[k]
				if row == nil {
					row = &api.UsageRow{Day: k[0], Month: k[1], Model: k[2], Project: k[3], Agent: k[4], Session: k[5]}
					groups[k] = row
				}
				addCell(row, c)
				addCell(&rep.Total, c)
			}
			if counted {
				rep.Sessions++
			}
		}
		return nil
	})
	if err != nil {
		return api.UsageReport{}, err
	}
	for _, row := range groups {
		rep.Rows = append(rep.Rows, *row)
	}
	slices.SortFunc(rep.Rows, func(a, b api.UsageRow) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), strings.Compare(a.Month, b.Month), strings.Compare(a.Model, b.Model),
			strings.Compare(a.Project, b.Project), strings.Compare(a.Agent, b.Agent), strings.Compare(a.Session, b.Session))
	})
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

func addCell(r *api.UsageRow, c *usageCell) {
	r.Turns += c.Turns
	r.Calls += c.Calls
	r.Input += c.Input
	r.Output += c.Output
	r.CacheRead += c.CacheRead
	r.CacheWrite += c.CacheWrite
	r.Tokens += c.Tokens
	r.Cost += c.Cost
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
