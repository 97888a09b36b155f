package api

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// UsageRequest sums the tokens and cost of model calls across the
// tenant's sessions — assistant replies (turns) and usage entries (calls
// outside the conversation) — grouped by the dimensions By names, in that
// order: UsageByDay, UsageByMonth, UsageByModel, UsageByProject (the session's
// working directory), UsageByAgent (the agent that made the session, as
// search's agent filter names it), UsageBySession. By left out is day and
// model; an empty list asks for the total alone.
//
// The filters narrow what is summed: Since and Until are days (UTC,
// 2026-01-02, or an RFC 3339 time, taken as its UTC day), both included;
// Model is provider/model or the model's name alone; Project a working
// directory, counting every session in it or below; Agent and Session
// exact.
//
// A fork's copies of its parent's entries (those stamped before the fork
// was made) count once, in the parent.
type UsageRequest struct {
	By      []string `json:"by,omitzero"`
	Since   string   `json:"since,omitempty"`
	Until   string   `json:"until,omitempty"`
	Model   string   `json:"model,omitempty"`
	Project string   `json:"project,omitempty"`
	Agent   string   `json:"agent,omitempty"`
	Session string   `json:"session,omitempty"`
	// Limit bounds the rows (default and at most MaxUsageRows); Total
	// counts every row, those left out included.
	Limit int `json:"limit,omitzero"`
}

// The dimensions of a usage report (UsageRequest.By).
const (
	UsageByDay     = "day"
	UsageByMonth   = "month"
	UsageByModel   = "model"
	UsageByProject = "project"
	UsageByAgent   = "agent"
	UsageBySession = "session"
)

// UsageDimensions lists the dimensions, in the order a report's columns
// show them.
var UsageDimensions = []string{UsageByDay, UsageByMonth, UsageByModel, UsageByProject, UsageByAgent, UsageBySession}

// MaxUsageRows bounds a usage report's rows.
const MaxUsageRows = 5000

// UsageRow is the usage of one group: its values of the dimensions asked
// for (the others empty; "" also where an entry has no such value: a
// reply without a model, a session without a working directory), what
// its calls consumed, and the averages per turn.
type UsageRow struct {
	Day     string `json:"day,omitempty"`
	Month   string `json:"month,omitempty"`
	Model   string `json:"model,omitempty"`
	Project string `json:"project,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	UsageSums
	// TokensPerTurn and CostPerTurn are Tokens and Cost over Turns+Calls
	// (0 when there are none).
	TokensPerTurn float64 `json:"tokensPerTurn"`
	CostPerTurn   float64 `json:"costPerTurn"`
}

// UsageSums are what model calls consumed, each API call counted once
// however many lines or entries repeat it. Turns counts assistant
// replies (a Codex rollout's token counts among them); Calls usage
// entries (a model called outside the conversation: compaction, cache
// warming…).
//
// Cost is in dollars: what the agent recorded (pi's cost), else the
// tokens at the price table's prices when the call was made. Calls of a
// model the table does not price are not in Cost: UnpricedCalls counts
// them and UnpricedTokens their tokens, so a report says how much of it
// is unknown rather than calling it free.
type UsageSums struct {
	Turns          int64   `json:"turns"`
	Calls          int64   `json:"calls"`
	Input          int64   `json:"input"`
	Output         int64   `json:"output"`
	CacheRead      int64   `json:"cacheRead"`
	CacheWrite     int64   `json:"cacheWrite"`
	Tokens         int64   `json:"tokens"`
	Cost           float64 `json:"cost"`
	UnpricedCalls  int64   `json:"unpricedCalls,omitzero"`
	UnpricedTokens int64   `json:"unpricedTokens,omitzero"`
}

// Add adds o to s.
func (s *UsageSums) Add(o UsageSums) {
	s.Turns += o.Turns
	s.Calls += o.Calls
	s.Input += o.Input
	s.Output += o.Output
	s.CacheRead += o.CacheRead
	s.CacheWrite += o.CacheWrite
	s.Tokens += o.Tokens
	s.Cost += o.Cost
	s.UnpricedCalls += o.UnpricedCalls
	s.UnpricedTokens += o.UnpricedTokens
}

// Sub takes o, added before, out of s.
func (s *UsageSums) Sub(o UsageSums) {
	s.Turns -= o.Turns
	s.Calls -= o.Calls
	s.Input -= o.Input
	s.Output -= o.Output
	s.CacheRead -= o.CacheRead
	s.CacheWrite -= o.CacheWrite
	s.Tokens -= o.Tokens
	s.Cost -= o.Cost
	s.UnpricedCalls -= o.UnpricedCalls
	s.UnpricedTokens -= o.UnpricedTokens
}

// CostKnown tells whether Cost is the whole cost: no call of a model
// without a price is in the sums.
func (s UsageSums) CostKnown() bool { return s.UnpricedCalls == 0 }

// Of is r's value of dimension dim ("" for none).
func (r UsageRow) Of(dim string) string {
	switch dim {
	case UsageByDay:
		return r.Day
	case UsageByMonth:
		return r.Month
	case UsageByModel:
		return r.Model
	case UsageByProject:
		return r.Project
	case UsageByAgent:
		return r.Agent
	case UsageBySession:
		return r.Session
	}
	return ""
}

// UsageReport is a usage request's answer: the rows, ordered by the
// dimensions asked for (days and months oldest first), and the total of
// everything the filters kept.
type UsageReport struct {
	By   []string   `json:"by"`
	Rows []UsageRow `json:"rows"`
	// Total sums every row, those a Limit left out included; Sessions
	// counts the sessions that contributed; Groups counts the rows before
	// the Limit.
	Total    UsageRow `json:"total"`
	Sessions int      `json:"sessions"`
	Groups   int      `json:"groups"`
	Cut      bool     `json:"cut,omitzero"`
}

// Checked is r with its defaults filled in, or what is wrong with it:
// since and until as days (YYYY-MM-DD, "" for none).
func (r UsageRequest) Checked() (c UsageRequest, since, until string, err error) {
	c = r
	if c.By == nil {
		c.By = []string{UsageByDay, UsageByModel}
	}
	if len(c.By) > len(UsageDimensions) {
		return c, "", "", badRequest("/by", "%d dimensions (there are %d)", len(c.By), len(UsageDimensions))
	}
	for i, d := range c.By {
		if !slices.Contains(UsageDimensions, d) {
			return c, "", "", badRequest("/by", "%.40q is not a dimension (%s)", d, strings.Join(UsageDimensions, ", "))
		}
		if slices.Contains(c.By[:i], d) {
			return c, "", "", badRequest("/by", "%q given twice", d)
		}
	}
	switch {
	case c.Limit < 0:
		return c, "", "", badRequest("/limit", "%d is negative", c.Limit)
	case c.Limit == 0 || c.Limit > MaxUsageRows:
		c.Limit = MaxUsageRows
	}
	for _, f := range []struct{ field, v string }{{"/model", c.Model}, {"/project", c.Project}, {"/agent", c.Agent}, {"/session", c.Session}} {
		if len(f.v) > 4096 || !utf8.ValidString(f.v) {
			return c, "", "", badRequest(f.field, "%s is not valid UTF-8 of at most 4096 bytes", f.field[1:])
		}
	}
	if since, err = usageDay("/since", c.Since); err != nil {
		return c, "", "", err
	}
	if until, err = usageDay("/until", c.Until); err != nil {
		return c, "", "", err
	}
	if since != "" && until != "" && until < since {
		return c, "", "", badRequest("/until", "until (%s) is before since (%s)", until, since)
	}
	return c, since, until, nil
}

// usageDay is v's UTC day.
func usageDay(field, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t.Format(time.DateOnly), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return "", badRequest(field, "%s is not a day (2026-01-02) nor a time (RFC 3339): %.64q", field[1:], v)
	}
	return t.UTC().Format(time.DateOnly), nil
}
