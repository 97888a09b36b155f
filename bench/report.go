package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one comparison: our figure beside its baseline from the same run.
type Row struct {
	Group string
	Name  string
	// Ours and Base are the figures, Unit their unit ("µs", "ms",
	// "appends/s", "B/entry", "ns/entry").
	Ours, Base float64
	Unit       string
	// BaseName says what the baseline is.
	BaseName string
	// Goal states the target, if any; Met whether it was reached.
	Goal string
	Met  bool
	// HigherIsBetter flips the ratio's sense (throughput).
	HigherIsBetter bool
}

// Ratio is ours / baseline.
func (r Row) Ratio() float64 {
	if r.Base == 0 {
		return 0
	}
	return r.Ours / r.Base
}

// Report is a run's results.
type Report struct {
	Machine string
	// Conditions are the CPU, the peers' versions and the other load seen.
	Conditions *Conditions
	Config     Config
	Started    time.Time
	Took       time.Duration
	Rows       []Row
	Notes      []string
}

func (r *Report) add(row Row) { r.Rows = append(r.Rows, row) }

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func num(v float64, unit string) string {
	switch {
	case v == 0:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

func ratio(r Row) string {
	if r.Base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r.Ratio())
}

func goal(r Row) string {
	if r.Goal == "" {
		return ""
	}
	if r.Met {
		return r.Goal + " ✓"
	}
	return r.Goal + " ✗"
}

// Table writes the report as an aligned text table.
func (r *Report) Table(w io.Writer) {
	fmt.Fprintf(w, "sessionlog bench — %s — %s, took %s\n", r.Started.Format("2006-01-02 15:04"), r.Machine, r.Took.Round(time.Second))
	if r.Conditions != nil {
		fmt.Fprintf(w, "conditions: %s\n", r.Conditions)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	group := ""
	for _, row := range r.Rows {
		if row.Group != group {
			if group != "" {
				fmt.Fprintln(tw, "\t\t\t\t\t")
			}
			group = row.Group
			fmt.Fprintf(tw, "%s\tours\tbaseline\tours/base\tbaseline is\tgoal\n", strings.ToUpper(group))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", row.Name, num(row.Ours, row.Unit), num(row.Base, row.Unit), ratio(row), row.BaseName, goal(row))
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintln(w, "- "+n)
	}
}

// Markdown writes the report as Markdown tables (the body of BENCHMARKS.md).
func (r *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Run %s on %s; the run took %s.\n", r.Started.Format("2006-01-02 15:04 MST"), r.Machine, r.Took.Round(time.Second))
	if r.Conditions != nil {
		fmt.Fprintf(w, "Conditions: %s.\n", r.Conditions)
	}
	group := ""
	for _, row := range r.Rows {
		if row.Group != group {
			group = row.Group
			fmt.Fprintf(w, "\n### %s\n\n| | ours | baseline | ours/baseline | baseline is | goal |\n|---|---:|---:|---:|---|---|\n", group)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row.Name, num(row.Ours, row.Unit), num(row.Base, row.Unit), ratio(row), row.BaseName, goal(row))
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
