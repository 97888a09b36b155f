package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/agentcore/sessionlog/session"
)

func runList(ctx context.Context, e env) error {
	fs := newFlags("ls", e)
	rf := addRepoFlags(fs)
	limit := fs.Int("limit", session.DefaultPageSize, fmt.Sprintf("sessions per page (1..%d)", session.MaxPageSize))
	cursor := fs.String("cursor", "", "where the previous page ended (printed after it)")
	asJSON := fs.Bool("json", false, "print JSON lines")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		page, err := repo.List(ctx, session.ListOptions{Limit: *limit, Cursor: *cursor})
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(e.stdout)
			for _, in := range page.Sessions {
				if err := enc.Encode(in); err != nil {
					return err
				}
			}
		} else {
			tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUPDATED\tENTRIES\tNAME")
			for _, in := range page.Sessions {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", in.ID, in.Updated, in.Entries, in.Name)
			}
			tw.Flush()
		}
		if page.Next != "" {
			fmt.Fprintf(e.stderr, "more: sessionlog ls -cursor %q\n", page.Next)
		}
		return nil
	})
}
