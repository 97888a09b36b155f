package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

func runVersion(ctx context.Context, e env) error {
	fs := newFlags("version", e)
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, versionLine())
	return nil
}

// versionLine is the module's version and the commit it was built from,
// from the build info Go records ("(devel)" for a build of a checkout;
// the commit then says which).
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "sessionlog (no build info) " + runtime.Version()
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	line := fmt.Sprintf("sessionlog %s", bi.Main.Version)
	if rev != "" {
		line += fmt.Sprintf(" commit %.12s%s %s", rev, modified, at)
	}
	return line + " " + runtime.Version()
}
