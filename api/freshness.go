package api

// How fresh a read must be, and how the service tells.

import "time"

// Freshness is how current a read's answer must be; every read of a
// session (open, stats, context, tree, entries, get) takes it.
//
// Consistency "linearizable" (the default) answers with every append
// acknowledged before the request: on a cluster the service proves it with
// a write to the session's stream (a read barrier) before answering; a
// stream on a server alone is asked for the session's last message.
// "replica" accepts an answer up to MaxLagMs stale — missing no append
// acknowledged more than MaxLagMs before the request — and skips that
// question while the service's copy of the session is known that fresh
// (it synced, or appended to the session, within the bound). A caller's
// own appends through the same node are always seen.
type Freshness struct {
	Consistency string `json:"consistency,omitempty"`
	// MaxLagMs bounds a "replica" read's staleness: default
	// DefaultMaxLagMs, at most MaxMaxLagMs.
	MaxLagMs int64 `json:"maxLagMs,omitzero"`
}

// MaxLag is the staleness f accepts (0: none), or why f is refused.
func (f Freshness) MaxLag() (time.Duration, error) {
	switch f.Consistency {
	case "", Linearizable:
		if f.MaxLagMs != 0 {
			return 0, badRequest("/maxLagMs", "maxLagMs bounds a %q read; a linearizable one is never stale", Replica)
		}
		return 0, nil
	case Replica:
		ms := f.MaxLagMs
		if ms == 0 {
			ms = DefaultMaxLagMs
		}
		if ms < 1 || ms > MaxMaxLagMs {
			return 0, badRequest("/maxLagMs", "maxLagMs must be 1 to %d, not %d", MaxMaxLagMs, f.MaxLagMs)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	return 0, badRequest("/consistency", "consistency must be %q or %q, not %q", Linearizable, Replica, f.Consistency)
}

// The consistencies a read may ask for (Freshness).
const (
	Linearizable = "linearizable"
	Replica      = "replica"
)

// Bounds of Freshness.MaxLagMs.
const (
	DefaultMaxLagMs = 1000
	MaxMaxLagMs     = 60_000
)
