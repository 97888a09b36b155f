package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// retentionRun bounds how many sessions the measured run archives.
const retentionRun = 500

// retention measures a retention policy on a store of many sessions: the
// dry run (listing every session, opening those past the policy to see
// whether they are protected) against listing alone, and a run that
// archives to the object store and deletes, per session, against opening
// and reading the session (what an archive cannot do without).
func retention(ctx context.Context, cfg Config, n *node, r *Report, p progress) error {
	total := cfg.RetentionSessions
	b, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	p.say("retention: creating %d sessions of 4 entries", total)
	msg, _ := message(200)
	err = createWith(ctx, b, "ret", 0, total, func(st *stream.Store, i int) error {
		var batch []*session.Entry
		parent := ""
		for k := range 4 {
			m := msg
			e := &session.Entry{Type: session.TypeMessage, ID: fmt.Sprintf("%08x", k+1), ParentID: parent, Timestamp: "2026-01-01T00:00:00.000Z", Message: &m}
			batch, parent = append(batch, e), e.ID
		}
		return st.AppendBatch(ctx, batch)
	})
	if err != nil {
		return err
	}
	listed, err := best(3, func() error {
		for cursor := ""; ; {
			page, err := b.List(ctx, session.ListOptions{Limit: session.MaxPageSize, Cursor: cursor})
			if err != nil {
				return err
			}
			if cursor = page.Next; cursor == "" {
				return nil
			}
		}
	})
	if err != nil {
		return err
	}
	pol := lifecycle.Policy{MaxSessions: total / 2, Archive: true}
	var plan lifecycle.Plan
	planned, err := best(3, func() (err error) {
		plan, err = lifecycle.MakePlan(ctx, b, pol, time.Now())
		return err
	})
	if err != nil {
		return err
	}
	if len(plan.Remove) != total-total/2 {
		return fmt.Errorf("bench: the plan removes %d of %d sessions", len(plan.Remove), total)
	}
	group := fmt.Sprintf("Retention over %d sessions (4 entries each), fsync %s", total, n.sync)
	r.add(Row{Group: group, Name: fmt.Sprintf("dry run: %d past the policy (kept: the %d most recent)", len(plan.Remove), pol.MaxSessions),
		Ours: millis(planned), Base: millis(listed), Unit: "ms", BaseName: "listing every session"})
	var sample strings.Builder
	plan.Write(&sample, 3)
	r.note("retention dry run, first lines:\n%s", sample.String())

	run := plan
	run.Remove = plan.Remove[:min(len(plan.Remove), retentionRun)]
	target, err := lifecycle.OpenStoreTarget(ctx, b.JetStream(), "BENCH_ARCHIVE", 1)
	if err != nil {
		return err
	}
	// The floor: open each session and read its entries.
	start := time.Now()
	for _, d := range run.Remove {
		st, err := b.Open(ctx, d.ID)
		if err != nil {
			return err
		}
		if _, err := st.Entries(ctx); err != nil {
			return err
		}
		st.Close(ctx)
	}
	read := time.Since(start) / time.Duration(len(run.Remove))
	p.say("retention: archiving and deleting %d sessions", len(run.Remove))
	start = time.Now()
	out, err := lifecycle.Run(ctx, b, run, lifecycle.RunOptions{Target: target})
	if err != nil {
		return err
	}
	each := time.Since(start) / time.Duration(len(out))
	r.add(Row{Group: group, Name: fmt.Sprintf("run: archive to the object store, read back, delete (%d sessions), per session", len(out)),
		Ours: millis(each), Base: millis(read), Unit: "ms", BaseName: "opening a session and reading its entries"})
	return nil
}
