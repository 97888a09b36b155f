package usage

import (
	"bytes"
	"time"

	json "github.com/go-json-experiment/json/v1"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// Call is what one model call consumed, as the agent that made it
// recorded it.
type Call struct {
	// Key names the API response the call is (Claude Code's message id):
	// calls of one key are one call, however many lines repeat it. ""
	// for none: the call is counted as it stands.
	Key string
	// Request is the request id beside Key (Claude Code's requestId).
	Request string
	// Sidechain marks a copy a side conversation replays (Claude Code's
	// isSidechain): of two calls of one key, the other is kept.
	Sidechain bool
	// Turn is an assistant reply; otherwise a call outside the
	// conversation (a usage entry, Codex's token counts).
	Turn bool
	// At is when the call was made.
	At time.Time
	// Provider and Model name the model ("" when unknown).
	Provider, Model string
	// Input is the input tokens not read from a cache; CacheRead those
	// read from one; CacheWrite those written to one, CacheWrite1h of
	// them for an hour (Anthropic prices those apart).
	Input, Output, CacheRead, CacheWrite, CacheWrite1h int64
	// Total is the tokens in all, when the agent gave a total larger than
	// the parts (else the parts' sum).
	Total int64
	// Fast is a call at Anthropic's fast speed (priced apart).
	Fast bool
	// Recorded is the cost the agent recorded itself (pi's cost, Claude
	// Code's costUSD), which is used as it is; nil when it recorded none.
	Recorded *float64
}

// Tokens is the call's tokens in all.
func (c Call) Tokens() int64 {
	return max(c.Total, c.Input+c.Output+c.CacheRead+c.CacheWrite)
}

// Name is the call's model as reports show it: provider/model, with
// "-fast" for a call at fast speed; "" when neither is known.
func (c Call) Name() string {
	if c.Provider == "" && c.Model == "" {
		return ""
	}
	m := c.Model
	if c.Fast {
		m += "-fast"
	}
	return c.Provider + "/" + m
}

// Reader reads the calls of one session's entries, given in the order
// they were written: a Codex rollout's token counts take their model from
// the turn context before them, and their amounts from the totals before
// them when they give only totals. The zero Reader is ready.
type Reader struct {
	codexModel  string
	codexTotals *codexTokens
}

// ReaderState is what a Reader carries from one entry to the next, to be
// kept with what was read so far and given back to a new Reader.
type ReaderState struct {
	CodexModel  string       `json:"codexModel,omitempty"`
	CodexTotals *codexTokens `json:"codexTotals,omitempty"`
}

// State is what r carries.
func (r *Reader) State() ReaderState {
	return ReaderState{CodexModel: r.codexModel, CodexTotals: r.codexTotals}
}

// Resume makes r go on from s.
func (r *Reader) Resume(s ReaderState) { r.codexModel, r.codexTotals = s.CodexModel, s.CodexTotals }

// Calls are the model calls entry e records: an assistant reply's, a
// usage entry's (pi 1.6's calls outside the conversation: titles, cache
// warming), a compaction's or branch summary's summarising call; for a line kept from Claude Code or Codex, what that line
// records as the agent wrote it (so an import counts what the agent
// counted, and imports made by earlier versions too).
func (r *Reader) Calls(e *session.Entry) []Call {
	if e == nil {
		return nil
	}
	if line, ok := transcript.RawLine(transcript.FormatClaudeCode, e); ok {
		if c, ok := claudeCall(line); ok {
			return []Call{c}
		}
		return nil
	}
	if line, ok := transcript.RawLine(transcript.FormatCodex, e); ok {
		if c, ok := r.codexCall(line); ok {
			return []Call{c}
		}
		return nil
	}
	var u *session.Usage
	c := Call{}
	switch {
	case e.Type == session.TypeMessage && e.Message != nil && e.Message.Assistant() != nil:
		a := e.Message.Assistant()
		u, c.Provider, c.Model, c.Turn = a.Usage, a.Provider, a.Model, true
	case e.Type == session.TypeUsage && e.UsageRecord() != nil:
		rec := e.UsageRecord()
		u, c.Provider, c.Model = rec.Usage, rec.Provider, rec.Model
	case e.Type == session.TypeCompaction && e.Compaction() != nil:
		u = e.Compaction().Usage // the summarising call (pi names no model)
	case e.Type == session.TypeBranchSummary && e.BranchSummary() != nil:
		u = e.BranchSummary().Usage
	}
	if u == nil {
		return nil
	}
	c.At, _ = time.Parse(time.RFC3339Nano, e.Timestamp)
	c.Input, c.Output, c.CacheRead, c.CacheWrite, c.Total = u.Input, u.Output, u.CacheRead, u.CacheWrite, u.TotalTokens
	if hasCost(u) {
		cost := u.Cost.Total
		c.Recorded = &cost
	}
	return []Call{c}
}

// hasCost tells whether a usage says what it cost. pi writes a cost with
// every usage; one of all zeros is taken as none given (a client that
// recorded tokens alone), so the price table prices it, or it is unknown.
func hasCost(u *session.Usage) bool {
	return u.Cost.Total != 0 || u.Cost.Input != 0 || u.Cost.Output != 0 || u.Cost.CacheRead != 0 || u.Cost.CacheWrite != 0
}

// claudeLine is what a Claude Code line says of its model call.
type claudeLine struct {
	Timestamp   string   `json:"timestamp"`
	Version     *string  `json:"version"`
	SessionID   *string  `json:"sessionId"`
	RequestID   *string  `json:"requestId"`
	IsSidechain bool     `json:"isSidechain"`
	CostUSD     *float64 `json:"costUSD"`
	Message     *struct {
		ID    *string `json:"id"`
		Model *string `json:"model"`
		Usage *struct {
			Input         *int64 `json:"input_tokens"`
			Output        *int64 `json:"output_tokens"`
			CacheWrite    int64  `json:"cache_creation_input_tokens"`
			CacheRead     int64  `json:"cache_read_input_tokens"`
			Speed         string `json:"speed"`
			CacheCreation *struct {
				FiveMinutes int64 `json:"ephemeral_5m_input_tokens"`
				OneHour     int64 `json:"ephemeral_1h_input_tokens"`
			} `json:"cache_creation"`
		} `json:"usage"`
	} `json:"message"`
}

// claudeCall reads the call a Claude Code line records. Lines are taken
// as ccusage takes them, so that the figures agree with the tool people
// bill from: a line with a message whose usage gives input and output
// tokens, a time, and no empty or null ids, model or version; the
// model "<synthetic>" (Claude Code's own notices) is no model.
func claudeCall(line []byte) (Call, bool) {
	if !bytes.Contains(line, []byte(`"usage"`)) {
		return Call{}, false
	}
	var l claudeLine
	if json.Unmarshal(line, &l) != nil || l.Message == nil || l.Message.Usage == nil {
		return Call{}, false
	}
	u := l.Message.Usage
	if u.Input == nil || u.Output == nil {
		return Call{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, l.Timestamp)
	if err != nil {
		return Call{}, false
	}
	if hasNullMember(line) || emptyOrNot(l.SessionID) || emptyOrNot(l.RequestID) || emptyOrNot(l.Message.ID) ||
		emptyOrNot(l.Message.Model) || (l.Version != nil && !semverPrefixed(*l.Version)) {
		return Call{}, false
	}
	c := Call{Turn: true, At: at, Provider: "anthropic", Sidechain: l.IsSidechain, Recorded: l.CostUSD,
		Input: *u.Input, Output: *u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Fast: u.Speed == "fast"}
	if cc := u.CacheCreation; cc != nil {
		// The breakdown, where given, is what was written.
		c.CacheWrite, c.CacheWrite1h = cc.FiveMinutes+cc.OneHour, cc.OneHour
	}
	if l.Message.ID != nil {
		c.Key = *l.Message.ID
	}
	if l.RequestID != nil {
		c.Request = *l.RequestID
	}
	if m := l.Message.Model; m != nil && *m != "<synthetic>" {
		c.Model = *m
	} else {
		c.Provider = ""
	}
	return c, true
}

// emptyOrNot tells whether an optional string is given empty.
func emptyOrNot(s *string) bool { return s != nil && *s == "" }

// nullMembers are the members a Claude Code line may not give as null
// (ccusage skips such a line), as they are written then.
var nullMembers = func() [][]byte {
	var out [][]byte
	for _, name := range []string{"id", "cwd", "model", "speed", "costUSD", "version", "sessionId", "requestId",
		"isApiErrorMessage", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		out = append(out, []byte(`"`+name+`":null`))
	}
	return out
}()

// hasNullMember tells whether line gives one of nullMembers as null.
func hasNullMember(line []byte) bool {
	for _, m := range nullMembers {
		if bytes.Contains(line, m) {
			return true
		}
	}
	return false
}

// semverPrefixed tells whether v starts with three dotted numbers.
func semverPrefixed(v string) bool {
	for i := range 3 {
		n := 0
		for n < len(v) && v[n] >= '0' && v[n] <= '9' {
			n++
		}
		if n == 0 {
			return false
		}
		v = v[n:]
		if i < 2 {
			if v == "" || v[0] != '.' {
				return false
			}
			v = v[1:]
		}
	}
	return true
}
