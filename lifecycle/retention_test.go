package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// aged creates sessions r0…r(n-1), session i created i days after base
// with two entries, r1 protected by a label and r2 by its metadata.
func aged(t *testing.T, repo session.Repo, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		at := base.Add(time.Duration(i) * 24 * time.Hour)
		h := session.Header{ID: fmt.Sprintf("r%d", i), Timestamp: at.Format(session.TimeLayout), Cwd: "/w"}
		if i == 2 {
			h.Metadata = session.Raw(`{"protected":true}`)
		}
		st, err := repo.Create(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		s, err := session.New(st, system.Config())
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("session %d", i)), Timestamp: at.UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if _, err := s.SetLabel(ctx, e.ID, lifecycle.ProtectedLabel); err != nil {
				t.Fatal(err)
			}
		}
		st.Close(ctx)
	}
}

func ids(ds []lifecycle.Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	slices.Sort(out)
	return out
}

// A plan removes what is past the policy and never what is protected;
// the run archives, reads the archive back, then deletes.
func TestRetentionPlanAndRun(t *testing.T) {
	ctx := context.Background()
	for name, repo := range repos(t) {
		t.Run(name, func(t *testing.T) {
			aged(t, repo, 6)
			now := base.Add(8 * 24 * time.Hour)
			// Created more than 5 days before now: r0, r1, r2 — of which
			// r1 and r2 are protected.
			plan, err := lifecycle.MakePlan(ctx, repo, lifecycle.Policy{MaxAge: lifecycle.Duration(5 * 24 * time.Hour), Archive: true}, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(plan.Remove); !slices.Equal(got, []string{"r0"}) || len(plan.Protected) != 2 || plan.Sessions != 6 {
				t.Fatalf("plan: remove %v, protected %v, of %d", got, plan.Protected, plan.Sessions)
			}
			dir := t.TempDir()
			out, err := lifecycle.Run(ctx, repo, plan, lifecycle.RunOptions{Target: lifecycle.DirTarget{Dir: dir}})
			if err != nil || len(out) != 1 || !out[0].Archived || !out[0].Deleted {
				t.Fatalf("run: %+v, %v", out, err)
			}
			if st, err := repo.Open(ctx, "r0"); !errors.Is(err, session.ErrSessionNotFound) {
				if st != nil {
					st.Close(ctx)
				}
				t.Fatalf("r0 is still there: %v", err)
			}
			if _, _, err := lifecycle.ReadArchive(ctx, lifecycle.DirTarget{Dir: dir}, "r0"); err != nil {
				t.Fatalf("r0's archive: %v", err)
			}
			// At most 2 sessions: of the 5 left, 2 protected, the least
			// recently updated of the other 3 goes.
			plan, err = lifecycle.MakePlan(ctx, repo, lifecycle.Policy{MaxSessions: 2}, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(plan.Remove); len(got) != 1 || got[0] == "r1" || got[0] == "r2" {
				t.Fatalf("max sessions plan: remove %v (protected %v)", got, plan.Protected)
			}
		})
	}
}

// failDelete is a repo whose next delete fails when fail is set.
type failDelete struct {
	session.Repo
	fail atomic.Bool
}

func (f *failDelete) Delete(ctx context.Context, id string) error {
	if f.fail.CompareAndSwap(true, false) {
		return errors.New("the node went away")
	}
	return f.Repo.Delete(ctx, id)
}

// failing is a target whose puts fail from the nth on.
type failing struct {
	lifecycle.Target
	failFrom int32
	n        atomic.Int32
}

func (f *failing) Put(ctx context.Context, name string, r io.Reader) error {
	if f.n.Add(1) >= f.failFrom {
		return errors.New("the target went away")
	}
	return f.Target.Put(ctx, name, r)
}

// A run cut off at any point — in the middle of any archive, or between
// an archive and its delete — leaves every session intact or archived
// (and maybe deleted), never deleted without a whole archive; a new plan
// and run finish the job without archiving anything twice.
func TestRetentionSurvivesInterruptions(t *testing.T) {
	ctx := context.Background()
	for name, repo := range repos(t) {
		t.Run(name, func(t *testing.T) {
			aged(t, repo, 6)
			policy := lifecycle.Policy{MaxIdle: lifecycle.Duration(time.Hour), Archive: true}
			now := time.Now().Add(100 * 24 * time.Hour)
			before := map[string]lifecycle.Digests{}
			for i := range 6 {
				id := fmt.Sprintf("r%d", i)
				d, err := lifecycle.DigestsIn(ctx, repo, id)
				if err != nil {
					t.Fatal(err)
				}
				before[id] = d
			}
			dir := lifecycle.DirTarget{Dir: t.TempDir()}
			// Between an archive and its delete: the archive stays, the
			// session too; the next run does not archive it again.
			flaky := &failDelete{Repo: repo}
			flaky.fail.Store(true)
			plan, err := lifecycle.MakePlan(ctx, repo, policy, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lifecycle.Run(ctx, flaky, plan, lifecycle.RunOptions{Target: dir}); err == nil {
				t.Fatal("the run did not fail with its delete")
			}
			first := plan.Remove[0].ID
			if st, err := repo.Open(ctx, first); err != nil {
				t.Fatalf("%s is gone after a failed delete: %v", first, err)
			} else {
				st.Close(ctx)
			}
			// Each archive is two puts (the file, then the manifest): cut
			// after 1, 2, 3… puts until a run gets through.
			done := false
			for cut := int32(2); !done; cut++ {
				plan, err := lifecycle.MakePlan(ctx, repo, policy, now)
				if err != nil {
					t.Fatal(err)
				}
				target := &failing{Target: dir, failFrom: cut}
				out, err := lifecycle.Run(ctx, repo, plan, lifecycle.RunOptions{Target: target})
				done = err == nil
				if cut == 2 && (len(out) != 1 || out[0].ID != first || !out[0].Deleted || target.n.Load() != 2) {
					// The first session's archive was whole: deleted
					// without a put; the second's first put went through,
					// its second was cut.
					t.Fatalf("after the failed delete: %+v, %d puts", out, target.n.Load())
				}
				for id, want := range before {
					got, err := lifecycle.DigestsIn(ctx, repo, id)
					switch {
					case err == nil && got != want:
						t.Fatalf("cut at %d: %s changed", cut, id)
					case errors.Is(err, session.ErrSessionNotFound):
						m, _, aerr := lifecycle.ReadArchive(ctx, dir, id)
						if aerr != nil || m.Digests != want {
							t.Fatalf("cut at %d: %s deleted without a whole archive: %v", cut, id, aerr)
						}
					case err != nil:
						t.Fatal(err)
					}
				}
				if cut > 20 {
					t.Fatal("the runs never finished")
				}
			}
			for id := range before {
				protected := id == "r1" || id == "r2"
				st, err := repo.Open(ctx, id)
				if protected != (err == nil) {
					t.Fatalf("%s after the last run: %v", id, err)
				}
				if err == nil {
					st.Close(ctx)
				}
			}
		})
	}
}
