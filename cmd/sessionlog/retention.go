package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
)

// policyFlags build a retention policy from flags or a file.
type policyFlags struct {
	file            string
	maxIdle, maxAge time.Duration
	maxSessions     int
	archive         bool
}

func addPolicyFlags(fs *flag.FlagSet) *policyFlags {
	p := &policyFlags{}
	fs.StringVar(&p.file, "policy", "", `retention policy as JSON: {"maxIdle":"720h","maxAge":"","maxSessions":0,"archive":true} (the flags below override it)`)
	fs.DurationVar(&p.maxIdle, "max-idle", 0, "remove sessions not updated for this long (0: no limit)")
	fs.DurationVar(&p.maxAge, "max-age", 0, "remove sessions created this long ago (0: no limit)")
	fs.IntVar(&p.maxSessions, "max-sessions", 0, "keep at most this many sessions, the most recently updated (0: no limit)")
	fs.BoolVar(&p.archive, "archive", false, "archive each session before deleting it")
	return p
}

// loadPolicy reads a policy file.
func loadPolicy(path string) (lifecycle.Policy, error) {
	var p lifecycle.Policy
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func (p *policyFlags) policy(fs *flag.FlagSet) (lifecycle.Policy, error) {
	var pol lifecycle.Policy
	if p.file != "" {
		var err error
		if pol, err = loadPolicy(p.file); err != nil {
			return pol, err
		}
	}
	if flagSet(fs, "max-idle") {
		pol.MaxIdle = lifecycle.Duration(p.maxIdle)
	}
	if flagSet(fs, "max-age") {
		pol.MaxAge = lifecycle.Duration(p.maxAge)
	}
	if flagSet(fs, "max-sessions") {
		pol.MaxSessions = p.maxSessions
	}
	if flagSet(fs, "archive") {
		pol.Archive = p.archive
	}
	if !pol.Active() {
		return pol, usageError("a policy needs -max-idle, -max-age or -max-sessions (or -policy FILE)")
	}
	return pol, pol.Validate()
}

// runRetention applies a retention policy, or with -dry-run says what it
// would remove and why.
func runRetention(ctx context.Context, e env) error {
	fs := newFlags("retention", e)
	rf := addRepoFlags(fs)
	pf := addPolicyFlags(fs)
	af := addArchiveFlags(fs)
	dry := fs.Bool("dry-run", false, "print what would be removed and why; change nothing")
	asJSON := fs.Bool("json", false, "print the plan (and outcomes) as JSON")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	pol, err := pf.policy(fs)
	if err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		plan, err := lifecycle.MakePlan(ctx, repo, pol, time.Now())
		if err != nil {
			return err
		}
		if *dry {
			return printPlan(e.stdout, plan, *asJSON)
		}
		var target lifecycle.Target
		if pol.Archive {
			if target, err = af.target(ctx, repo); err != nil {
				return err
			}
		}
		out, err := lifecycle.Run(ctx, repo, plan, lifecycle.RunOptions{Target: target, Each: func(o lifecycle.Outcome) {
			if *asJSON {
				return
			}
			switch {
			case o.Skipped != "":
				fmt.Fprintf(e.stdout, "kept\t%s\t%s\n", o.ID, o.Skipped)
			case o.Archived:
				fmt.Fprintf(e.stdout, "archived and deleted\t%s\t%s\n", o.ID, o.Reason)
			default:
				fmt.Fprintf(e.stdout, "deleted\t%s\t%s\n", o.ID, o.Reason)
			}
		}})
		if *asJSON {
			json.NewEncoder(e.stdout).Encode(map[string]any{"plan": plan, "outcomes": out})
		}
		return err
	})
}

// printPlan writes a plan: a line per session removed, with its reason.
func printPlan(w io.Writer, plan lifecycle.Plan, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	plan.Write(w, 0)
	fmt.Fprintln(w, "nothing was changed (dry run)")
	return nil
}
