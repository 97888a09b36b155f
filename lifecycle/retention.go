package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

// Retention: which sessions are past keeping (a Policy), what a run
// would do (a Plan, which is also the dry run), and the run: archive then
// delete, or delete, one session at a time, in an order that survives
// being interrupted — a session is deleted only once its archive has been
// read back whole, and a run after a crash finds the archives already
// made (their digests still the session's) and carries on.

// ErrInvalidPolicy is returned by Policy.Validate.
var ErrInvalidPolicy = errors.New("lifecycle: invalid retention policy")

// Policy says which sessions are past keeping. Zero limits do not apply;
// a policy with none removes nothing.
type Policy struct {
	// MaxIdle removes sessions not updated for this long.
	MaxIdle Duration `json:"maxIdle,omitempty"`
	// MaxAge removes sessions created this long ago.
	MaxAge Duration `json:"maxAge,omitempty"`
	// MaxSessions keeps at most this many sessions: the least recently
	// updated go first.
	MaxSessions int `json:"maxSessions,omitempty"`
	// Archive archives each session before deleting it (else it is
	// deleted only).
	Archive bool `json:"archive,omitempty"`
}

// Duration is a time.Duration written as "720h" in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"720h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Validate checks the policy.
func (p Policy) Validate() error {
	switch {
	case p.MaxIdle < 0 || p.MaxAge < 0 || p.MaxSessions < 0:
		return fmt.Errorf("%w: negative limit", ErrInvalidPolicy)
	case p.MaxIdle > 0 && time.Duration(p.MaxIdle) < time.Minute, p.MaxAge > 0 && time.Duration(p.MaxAge) < time.Minute:
		return fmt.Errorf("%w: an age under a minute removes sessions being written", ErrInvalidPolicy)
	}
	return nil
}

// Active reports whether the policy removes anything.
func (p Policy) Active() bool { return p.MaxIdle > 0 || p.MaxAge > 0 || p.MaxSessions > 0 }

// ProtectedLabel, on any entry of a session, or "protected": true in its
// header's metadata, keeps a session from every policy.
const ProtectedLabel = "protected"

// Decision is one session a plan removes, and why.
type Decision struct {
	ID      string `json:"id"`
	Reason  string `json:"reason"`
	Updated string `json:"updated"`
	Created string `json:"created"`
	Entries int    `json:"entries"`
}

// Plan is what a policy removes now.
type Plan struct {
	Policy    Policy     `json:"policy"`
	At        string     `json:"at"`
	Sessions  int        `json:"sessions"`  // listed
	Protected []string   `json:"protected"` // past the policy, but protected
	Remove    []Decision `json:"remove"`    // least recently updated first
}

// Write lists the plan as `sessionlog retention -dry-run` prints it: a
// line per session removed (the first limit of them when limit > 0, then
// how many more), one per protected session kept, and a count.
func (p Plan) Write(w io.Writer, limit int) {
	action := "delete"
	if p.Policy.Archive {
		action = "archive, then delete"
	}
	shown := p.Remove
	if limit > 0 && len(shown) > limit {
		shown = shown[:limit]
	}
	for _, d := range shown {
		fmt.Fprintf(w, "%s\t%s\t%d entries, updated %s\t%s\n", action, d.ID, d.Entries, d.Updated, d.Reason)
	}
	if more := len(p.Remove) - len(shown); more > 0 {
		fmt.Fprintf(w, "… and %d more\n", more)
	}
	for _, id := range p.Protected {
		fmt.Fprintf(w, "keep\t%s\tprotected\n", id)
	}
	fmt.Fprintf(w, "%d of %d sessions would go (%d protected kept)\n", len(p.Remove), p.Sessions, len(p.Protected))
}

// MakePlan lists repo and decides, by policy at now, which sessions go.
// Only the sessions past the policy are opened (to see whether they are
// protected).
func MakePlan(ctx context.Context, repo session.Repo, p Policy, now time.Time) (Plan, error) {
	plan := Plan{Policy: p, At: now.UTC().Format(time.RFC3339), Protected: []string{}, Remove: []Decision{}}
	if err := p.Validate(); err != nil {
		return plan, err
	}
	var all []session.Listing
	for cursor := ""; ; {
		page, err := repo.List(ctx, session.ListOptions{Limit: session.MaxPageSize, Cursor: cursor})
		if err != nil {
			return plan, err
		}
		all = append(all, page.Sessions...)
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	plan.Sessions = len(all)
	if !p.Active() {
		return plan, nil
	}
	// Most recently updated first (as listed; sorted again to be sure).
	slices.SortStableFunc(all, func(a, b session.Listing) int { return -compareTimes(a.Updated, b.Updated) })
	kept := 0
	for _, s := range all {
		reason := ""
		updated, created := parseTime(s.Updated), parseTime(s.Created)
		switch {
		case p.MaxIdle > 0 && !updated.IsZero() && now.Sub(updated) > time.Duration(p.MaxIdle):
			reason = fmt.Sprintf("not updated for %s (max idle %s)", roundDur(now.Sub(updated)), time.Duration(p.MaxIdle))
		case p.MaxAge > 0 && !created.IsZero() && now.Sub(created) > time.Duration(p.MaxAge):
			reason = fmt.Sprintf("created %s ago (max age %s)", roundDur(now.Sub(created)), time.Duration(p.MaxAge))
		case p.MaxSessions > 0 && kept >= p.MaxSessions:
			reason = fmt.Sprintf("beyond the %d most recently updated sessions", p.MaxSessions)
		}
		if reason != "" {
			protected, err := isProtected(ctx, repo, s.ID)
			if errors.Is(err, session.ErrSessionNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return plan, err
			}
			if protected {
				plan.Protected = append(plan.Protected, s.ID)
				reason = "" // kept, and counted as kept
			}
		}
		if reason == "" {
			kept++
			continue
		}
		plan.Remove = append(plan.Remove, Decision{ID: s.ID, Reason: reason, Updated: s.Updated, Created: s.Created, Entries: s.Entries})
	}
	// The least recently updated go first: a run cut short has removed
	// the oldest.
	slices.Reverse(plan.Remove)
	return plan, nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func compareTimes(a, b string) int { return parseTime(a).Compare(parseTime(b)) }

func roundDur(d time.Duration) time.Duration { return d.Round(time.Minute) }

// isProtected reports whether a session is kept from every policy.
func isProtected(ctx context.Context, repo session.Repo, id string) (protected bool, err error) {
	err = withSession(ctx, repo, id, func(st session.Store, h session.Header) (err error) {
		protected, err = protectedIn(ctx, st, h)
		return err
	})
	return protected, err
}

// protectedIn reports whether an open session is protected: by its
// header's metadata, or a label (neither needs its entries read).
func protectedIn(ctx context.Context, st session.Store, h session.Header) (bool, error) {
	if len(h.Metadata) > 0 && bytes.Contains(h.Metadata, []byte(`"protected"`)) {
		var md map[string]json.RawMessage
		if json.Unmarshal(h.Metadata, &md) == nil && string(md["protected"]) == "true" {
			return true, nil
		}
	}
	s, err := session.New(st, system.Config())
	if err != nil {
		return false, err
	}
	labels, err := s.Labels(ctx)
	if err != nil {
		return false, err
	}
	for _, l := range labels {
		if l.Label == ProtectedLabel {
			return true, nil
		}
	}
	return false, nil
}

// Outcome is what a run did to one session.
type Outcome struct {
	Decision
	// Archived is set when the session's archive was written (or found
	// already written, with the session's digests) and read back.
	Archived bool `json:"archived"`
	Deleted  bool `json:"deleted"`
	// Skipped says why a session of the plan was left (updated or
	// protected since the plan, gone).
	Skipped string `json:"skipped,omitempty"`
}

// RunOptions are a run's.
type RunOptions struct {
	// Target is where archives go (required when the policy archives).
	Target Target
	// Now is the run's clock (time.Now when nil).
	Now func() time.Time
	// Each, when set, is told of each session done, in order.
	Each func(Outcome)
}

// Run carries out plan: each session, in the plan's order, is checked
// again (a session updated or protected since the plan is left), then
// archived if the policy says so — skipped when an archive with its
// current digests is there already — its archive read back whole, and
// only then deleted. Interrupted anywhere, every session is as it was, or
// archived, or archived and deleted; a new plan and run finish the job.
func Run(ctx context.Context, repo session.Repo, plan Plan, opts RunOptions) ([]Outcome, error) {
	if plan.Policy.Archive && opts.Target == nil {
		return nil, fmt.Errorf("%w: archiving needs a target", ErrInvalidPolicy)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var out []Outcome
	for _, d := range plan.Remove {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		o, err := runOne(ctx, repo, plan, d, opts.Target, now)
		if err != nil {
			return out, fmt.Errorf("lifecycle: retention of %s: %w", d.ID, err)
		}
		out = append(out, o)
		if opts.Each != nil {
			opts.Each(o)
		}
	}
	return out, nil
}

func runOne(ctx context.Context, repo session.Repo, plan Plan, d Decision, target Target, now func() time.Time) (Outcome, error) {
	o := Outcome{Decision: d}
	// One read of the session: still as planned, not protected since,
	// and (to archive it) its entries. Closed before it is deleted.
	err := withSession(ctx, repo, d.ID, func(st session.Store, h session.Header) error {
		// An append since the plan adds an entry.
		stats, err := st.Stats(ctx)
		if err != nil {
			return err
		}
		if stats.Entries != d.Entries {
			o.Skipped = "updated since the plan"
			return nil
		}
		protected, err := protectedIn(ctx, st, h)
		if err != nil || protected {
			o.Skipped = "protected since the plan"
			return err
		}
		if !plan.Policy.Archive {
			return nil
		}
		entries, err := st.Entries(ctx)
		if err != nil {
			return err
		}
		return archiveOnce(ctx, target, h, entries, now)
	})
	if errors.Is(err, session.ErrSessionNotFound) {
		o.Skipped = "gone"
		return o, nil
	}
	if err != nil || o.Skipped != "" {
		return o, err
	}
	o.Archived = plan.Policy.Archive
	if err := repo.Delete(ctx, d.ID); err != nil && !errors.Is(err, session.ErrSessionNotFound) {
		return o, err
	}
	o.Deleted = true
	return o, nil
}

// archiveOnce makes sure target holds a whole archive of the session as
// it is — one made earlier with its digests counts — and reads it back.
func archiveOnce(ctx context.Context, target Target, h session.Header, entries []*session.Entry, now func() time.Time) error {
	var want Digests
	m, err := ReadManifest(ctx, target, h.ID)
	switch {
	case err == nil:
		// An archive is there: of the session as it is now?
		t, err := treeOf(h, entries)
		if err != nil {
			return err
		}
		if want, err = DigestsOf(t); err != nil {
			return err
		}
		if m.Digests == want {
			break
		}
		fallthrough
	case errors.Is(err, ErrNotArchived), errors.Is(err, ErrBadArchive):
		written, err := writeArchive(ctx, target, h, entries, now())
		if err != nil {
			return err
		}
		want = written.Digests
	default:
		return err
	}
	// Deleted only once the archive reads back whole and is of the
	// session as it is.
	back, _, err := ReadArchive(ctx, target, h.ID)
	if err != nil {
		return err
	}
	if back.Digests != want {
		return fmt.Errorf("the archive read back is not of the session as it is")
	}
	return nil
}

// RetentionJob is the lease name retention runs under.
const RetentionJob = "retention"

// renewEvery is how many sessions a scheduled run does between renewals
// of its lease.
const renewEvery = 16

// Scheduled runs the policy once if this node takes the lease (one node
// of a deployment at a time): a plan, then the run, renewing the lease
// as it goes and stopping if it lapsed. It returns ErrLeaseHeld when
// another node holds it.
func Scheduled(ctx context.Context, repo session.Repo, leases jetstream.KeyValue, holder string, p Policy, target Target) ([]Outcome, error) {
	lease, err := Acquire(ctx, leases, RetentionJob, holder)
	if err != nil {
		return nil, err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	plan, err := MakePlan(ctx, repo, p, time.Now())
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	n := 0
	out, err := Run(rctx, repo, plan, RunOptions{Target: target, Each: func(Outcome) {
		if n++; n%renewEvery == 0 {
			if err := lease.Renew(ctx); err != nil {
				cancel(err)
			}
		}
	}})
	if cause := context.Cause(rctx); cause != nil && errors.Is(cause, ErrLeaseHeld) {
		return out, cause
	}
	return out, err
}
