package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/upkeep"
)

// runStatus prints a node's or a cluster's health in one screen: its
// servers, the partitions and their leaders and followers, the other
// streams, the consumers and what they have pending, the account's usage,
// and warnings. It exits 1 when there are warnings (-json: the report).
func runStatus(ctx context.Context, e env) error {
	fs := newFlags("status", e)
	rf := addRepoFlags(fs)
	asJSON := fs.Bool("json", false, "the report as JSON")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	return withRepo(ctx, rf, func(repo session.Repo) error {
		b, ok := repo.(*stream.Backend)
		if !ok {
			return errors.New("status reports on JetStream deployments; this is a directory of files")
		}
		h, err := b.Health(ctx)
		if err != nil {
			return err
		}
		// What the node serving the data dir or URL says of itself, when
		// one does (its connections, its link, edges revoked there).
		if nr, ok := askNode(ctx, b.Conn()); ok {
			h.Warnings = append(h.Warnings, nr.Warnings...)
			h.Notes = append(h.Notes, nr.Notes...)
		}
		if *asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(h); err != nil {
				return err
			}
		} else {
			printStatus(e.stdout, b.Conn().ConnectedServerName(), h)
		}
		if len(h.Warnings) > 0 {
			return fmt.Errorf("%d warning(s)", len(h.Warnings))
		}
		return nil
	})
}

func printStatus(w io.Writer, via string, h upkeep.Health) {
	servers := "one server"
	if len(h.Servers) > 0 {
		servers = fmt.Sprintf("%d server(s): %s", len(h.Servers), strings.Join(h.Servers, ", "))
	}
	fmt.Fprintf(w, "sessionlog status, asked of %s: %s\n", via, servers)
	a := h.Account
	fmt.Fprintf(w, "account: %s stored%s, %s in memory%s, %d streams, %d consumers\n\n",
		bytesOf(a.Store), limitOf(a.StoreLimit), bytesOf(a.Memory), limitOf(a.MemoryLimit), a.Streams, a.Consumers)

	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tSTREAM\tLEADER\tFOLLOWERS (lag)\tMESSAGES\tBYTES")
	for _, s := range h.Streams {
		if s.Partition >= 0 {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", s.Partition, s.Name, leaderOf(s), followersOf(s), s.Messages, bytesOf(s.Bytes))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OTHER STREAM\tLEADER\tFOLLOWERS (lag)\tMESSAGES\tBYTES")
	for _, s := range h.Streams {
		if s.Partition < 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, leaderOf(s), followersOf(s), s.Messages, bytesOf(s.Bytes))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	edges := 0
	for _, s := range h.Streams {
		edges += len(s.Edges)
	}
	if edges > 0 {
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EDGE\tSTREAM\tLAG\tLAST HEARD\tERROR")
		for _, s := range h.Streams {
			for _, e := range s.Edges {
				heard := "never"
				if e.SinceLastActive >= 0 {
					heard = e.SinceLastActive.Round(time.Second).String() + " ago"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.Domain, s.Name, e.Lag, heard, e.Error)
			}
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tSTREAM\tKIND\tPENDING\tACK PENDING\tREDELIVERED")
	n := 0
	for _, s := range h.Streams {
		for _, c := range s.Consumers {
			kind := "ephemeral"
			if c.Durable {
				kind = "durable"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", c.Name, s.Name, kind, c.Pending, c.AckPending, c.Redelivered)
			n++
		}
		if s.ConsumersLeftOut > 0 {
			fmt.Fprintf(tw, "(and %d more)\t%s\t\t\t\t\n", s.ConsumersLeftOut, s.Name)
		}
	}
	if n == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range h.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(h.Notes) > 0 {
		fmt.Fprintln(w)
	}
	if len(h.Warnings) == 0 {
		fmt.Fprintln(w, "no warnings")
		return
	}
	fmt.Fprintf(w, "WARNINGS (%d)\n", len(h.Warnings))
	for _, warn := range h.Warnings {
		fmt.Fprintf(w, "  ! %s\n", warn)
	}
}

// askNode asks the node behind nc how it is (OpNode); false when no
// node answers (a data dir opened by this process, an older node).
func askNode(ctx context.Context, nc *nats.Conn) (slapi.NodeReply, bool) {
	var r slapi.NodeReply
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := slapi.NewClient(nc, slapi.DefaultSubject).Call(cctx, slapi.OpNode, struct{}{}, &r); err != nil {
		return r, false
	}
	return r, true
}

func leaderOf(s upkeep.Stream) string {
	switch {
	case !s.Clustered:
		return "(single server)"
	case s.Leader == "":
		return "NONE"
	}
	return s.Leader
}

func followersOf(s upkeep.Stream) string {
	if len(s.Replicas) == 0 {
		return "-"
	}
	var parts []string
	for _, r := range s.Replicas {
		state := fmt.Sprintf("%d", r.Lag)
		switch {
		case r.Offline:
			state = "offline"
		case !r.Current:
			state = fmt.Sprintf("behind %d", r.Lag)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Name, state))
	}
	return strings.Join(parts, ", ")
}

func limitOf(limit int64) string {
	if limit <= 0 {
		return ""
	}
	return " of " + bytesOf(uint64(limit))
}

func bytesOf(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
