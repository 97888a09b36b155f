package api

import (
	"time"

	"github.com/agentcore/sessionlog/session"
)

// SearchRequest searches the text of messages across the tenant's
// sessions (see package search): every word of Query in an entry, any
// case; in double quotes, a phrase. Session narrows it to one session;
// Limit (default 20) and Offset page the hits, best first.
type SearchRequest struct {
	Query   string `json:"query"`
	Session string `json:"session,omitempty"`
	// Scope, with Session, is what of the session is searched: ScopeBranch
	// (the default) the path from the root to At (default: the leaf),
	// what the session's model built on; ScopeSubtree At and every entry
	// under it; ScopeSession every branch.
	Scope string `json:"scope,omitempty"`
	At    string `json:"at,omitempty"`
	// The filters: an entry's role (user, assistant, toolResult…), a
	// tool it called or answered, a file its tool calls named (or a
	// directory above one), the model that wrote it (provider/model),
	// the agent that made its session (pi, claude-code, codex,
	// langgraph, openai-agents), the session's working directory (or one
	// above it), its label (the latest label entry naming it), and its
	// time: since <= t < until (RFC 3339).
	Role      string `json:"role,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Path      string `json:"path,omitempty"`
	Model     string `json:"model,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	Label     string `json:"label,omitempty"`
	Since     string `json:"since,omitempty"`
	Until     string `json:"until,omitempty"`
	Limit     int    `json:"limit,omitzero"`
	Offset    int    `json:"offset,omitzero"`
	Freshness `json:",inline"`
}

// The scopes of a search within a session (SearchRequest.Scope).
const (
	ScopeBranch  = "branch"
	ScopeSubtree = "subtree"
	ScopeSession = "session"
)

// SearchReply is a page of hits, best first.
type SearchReply struct {
	Hits []SearchHit `json:"hits"`
	// Total is how many entries match (sessions since deleted included
	// until the node's index learns of it). TotalEstimated says it is an
	// estimate: a query of common words searches the newest entries
	// first, and those older than its page are counted at the rate of
	// the newer.
	Total          uint64 `json:"total"`
	TotalEstimated bool   `json:"totalEstimated,omitzero"`
}

// SearchHit is one entry that matches: its session, where it is, and
// text around the first matches, with the byte ranges [start, end) of
// the matched words in Snippet.
type SearchHit struct {
	Session   string   `json:"session"`
	Entry     string   `json:"entry"`
	Type      string   `json:"type"`
	Role      string   `json:"role,omitempty"`
	Timestamp string   `json:"timestamp"`
	Score     float64  `json:"score"`
	Snippet   string   `json:"snippet"`
	Matches   [][2]int `json:"matches"`
	// OutsideContext marks, in a search of a branch, an entry its
	// session's model no longer sees: one a compaction summarized.
	OutsideContext bool `json:"outsideContext,omitzero"`
}

// Scoped checks what r asks to search and returns its scope: of a
// session, its branch unless r says otherwise; without one, every
// session (ScopeSession). The session's id is the caller's to check.
func (r *SearchRequest) Scoped() (string, error) {
	scope := r.Scope
	switch {
	case scope == "" && r.Session != "":
		scope = ScopeBranch
	case scope == "" || scope == ScopeSession:
		scope = ScopeSession
	case scope != ScopeBranch && scope != ScopeSubtree:
		return "", badRequest("/scope", "scope must be %q, %q or %q, not %.64q", ScopeBranch, ScopeSubtree, ScopeSession, scope)
	case r.Session == "":
		return "", badRequest("/session", "a %s scope is of a session: give its id", scope)
	}
	switch {
	case r.At != "" && scope == ScopeSession:
		return "", badRequest("/at", "at names the entry a branch ends at or a subtree starts from: not of a %s scope", scope)
	case r.At == "" && scope == ScopeSubtree:
		return "", badRequest("/at", "a subtree scope needs at, the entry it starts from")
	case r.At != "":
		if err := session.ValidateID(r.At); err != nil {
			return "", badRequest("/at", "%v", err)
		}
	}
	return scope, nil
}

// Window is r's time bounds, or what is wrong with them.
func (r *SearchRequest) Window() (since, until time.Time, err error) {
	for _, b := range []struct {
		field, v string
		t        *time.Time
	}{{"/since", r.Since, &since}, {"/until", r.Until, &until}} {
		if b.v == "" {
			continue
		}
		if *b.t, err = time.Parse(time.RFC3339Nano, b.v); err != nil {
			return since, until, badRequest(b.field, "%s is not a time (RFC 3339, e.g. 2026-01-02T15:04:05Z): %.64q", b.field[1:], b.v)
		}
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return since, until, badRequest("/until", "until must be after since")
	}
	return since, until, nil
}

// BySession groups r's hits by session, the sessions in the order of
// their best hits, each session's hits in theirs.
func (r SearchReply) BySession() [][]SearchHit {
	var out [][]SearchHit
	at := map[string]int{}
	for _, h := range r.Hits {
		i, ok := at[h.Session]
		if !ok {
			i = len(out)
			at[h.Session] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], h)
	}
	return out
}
