package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session"
)

func runList(ctx context.Context, e env) error {
	fs := newFlags("ls", e)
	rf := addRepoFlags(fs)
	limit := fs.Int("limit", session.DefaultPageSize, fmt.Sprintf("sessions per page (1..%d)", session.MaxPageSize))
	cursor := fs.String("cursor", "", "where the previous page ended (printed after it)")
	asJSON := fs.Bool("json", false, "print JSON lines")
	f := session.Filter{Meta: map[string]string{}}
	fs.StringVar(&f.Name, "name", "", "only sessions whose name contains this (any case)")
	fs.StringVar(&f.Cwd, "cwd", "", "only sessions whose working directory is this one or below it")
	fs.Func("label", "only sessions with an entry labelled so (repeat for several)", func(s string) error {
		f.Labels = append(f.Labels, s)
		return nil
	})
	fs.Func("meta", "only sessions whose metadata has `key=value` (repeat for several)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", s)
		}
		f.Meta[k] = v
		return nil
	})
	since := fs.String("since", "", "only sessions updated at or after this `time` (RFC 3339, a date, or a duration ago: 24h)")
	until := fs.String("until", "", "only sessions updated before this `time` (as -since)")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	var err error
	if f.Since, err = whenFlag("since", *since, time.Now()); err != nil {
		return err
	}
	if f.Until, err = whenFlag("until", *until, time.Now()); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return usageError("%s", strings.TrimPrefix(err.Error(), session.ErrInvalidConfig.Error()+": "))
	}
	var got []session.Listing
	next := ""
	err = withRepo(ctx, rf, func(repo session.Repo) error {
		// A filtered page may come back short: read on until the page is
		// full or the listing ends.
		opts := session.ListOptions{Limit: *limit, Cursor: *cursor, Filter: &f}
		for {
			page, err := repo.List(ctx, opts)
			if err != nil {
				return err
			}
			got = append(got, page.Sessions...)
			next = page.Next
			if next == "" || len(got) >= *limit {
				return nil
			}
			opts.Cursor, opts.Limit = next, *limit-len(got)
		}
	})
	if err != nil {
		return err // a data dir with no store says so, as every verb does: a mistyped -data is not an empty listing
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, in := range got {
			if err := enc.Encode(in); err != nil {
				return err
			}
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
		// A session's time is when it happened (its last entry), its title
		// its name or else its first message, as the console shows them.
		fmt.Fprintln(tw, "ID\tLAST ACTIVITY\tENTRIES\tTITLE\tLABELS")
		for _, in := range got {
			when, title := cmp.Or(in.LastActivity, in.Updated), in.Name
			if title == "" && in.FirstMessage != "" {
				title = "“" + outline.OneLine(in.FirstMessage, 60) + "”"
			}
			if in.ParentSession != "" && strings.HasPrefix(in.ID, in.ParentSession+"_") {
				title = "↳ subagent of " + in.ParentSession + ": " + title // a Claude Code Task's session
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", in.ID, shortTime(when), in.Entries, cell(title), cell(strings.Join(in.Labels, ",")))
		}
		tw.Flush()
	}
	if next != "" {
		fmt.Fprintf(e.stderr, "more: sessionlog ls -cursor %q (with the same filters)\n", next)
	}
	return nil
}

// whenFlag reads a time flag: RFC 3339, a date (UTC), or a duration
// before now.
func whenFlag(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageError("-%s %q: not an RFC 3339 time, a date (2025-01-31) or a duration ago (24h)", name, v)
}

// cell is s as one table cell: control characters (a name's newline or
// tab would break the row) and invisible formatting (a bidirectional
// override would reorder the row) written as Go escapes.
func cell(s string) string {
	if !strings.ContainsFunc(s, outline.Hidden) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// shortTime is an RFC 3339 time to the second, in UTC, as a table shows
// it; what is not one is shown as it is.
func shortTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return cell(s)
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
