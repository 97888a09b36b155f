package release

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Run is cmd/release: it makes the release its flags describe from the
// checkout it runs in, and prints what it made. It returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := DefaultConfig(".")
	fs.StringVar(&c.Version, "version", "", "the release's version, vMAJOR.MINOR.PATCH (its tag)")
	fs.BoolVar(&c.Snapshot, "snapshot", false, "a snapshot of this commit, versioned after the newest tag (nothing to publish)")
	fs.StringVar(&c.Out, "out", "dist", "where the artifacts go (a new or empty directory)")
	targets := fs.String("targets", "", "only these platforms, comma-separated (linux/amd64,…; default: all four)")
	fs.StringVar(&c.Python, "python", "", "the python3 that builds the wheel (default: the first whose setuptools can)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *targets != "" {
		c.Targets = nil
		for _, t := range strings.Split(*targets, ",") {
			os, arch, _ := strings.Cut(strings.TrimSpace(t), "/")
			c.Targets = append(c.Targets, Target{os, arch})
		}
	}
	m, err := Build(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if errors.Is(err, ErrConfig) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "sessionlog %s (commit %.12s) in %s:\n", m.Version, m.Commit, c.Out)
	for _, a := range m.Artifacts {
		fmt.Fprintf(stdout, "  %-8s %s\n", a.Kind, a.Name)
	}
	fmt.Fprintln(stdout, "  checksums.txt")
	return 0
}
