package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/agentcore/sessionlog/follow"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/snapshots"
	"github.com/agentcore/sessionlog/tenants"
)

// version is the release this binary is, set by the release build
// (-ldflags "-X main.version=v0.5.0"); a build of a checkout says what its
// build info says, and its commit.
var version = ""

// commit is the commit a release was built from, set by the release build
// too: a build without VCS stamping (-buildvcs=false) still names it.
var commit = ""

// storedFormat is one format sessionlog stores, the version it writes and
// the oldest it reads (docs/operations.md, Upgrades).
type storedFormat struct {
	Name   string `json:"name"`
	Writes int    `json:"writes"`
	Reads  [2]int `json:"reads"` // oldest, newest
	Note   string `json:"note,omitempty"`
}

func storedFormats() []storedFormat {
	return []storedFormat{
		{"session files (pi's JSONL)", session.CurrentVersion, [2]int{1, session.CurrentVersion}, "older versions are migrated as they are read"},
		{"entries on the stream (msgpack)", session.CurrentVersion, [2]int{session.CurrentVersion, session.CurrentVersion}, "the version of the session's header; a newer session is refused, the others served"},
		{"index records", stream.IndexVersion, [2]int{1, stream.IndexVersion}, "one of a newer version is passed over by listings and never rewritten"},
		{"snapshots (tips included)", snapshots.Version, [2]int{snapshots.OldestVersion, snapshots.Version}, "one of another version is passed over: the session is read from its messages"},
		{"backup manifests", lifecycle.BackupVersion, [2]int{1, lifecycle.BackupVersion}, ""},
		{"archive manifests", lifecycle.ArchiveVersion, [2]int{1, lifecycle.ArchiveVersion}, ""},
		{"tenants file", tenants.Version, [2]int{1, tenants.Version}, "its version member is optional (absent: 1)"},
		{"follow state file", follow.StateVersion, [2]int{1, follow.StateVersion}, "written as the bare map of files; the versioned form is read"},
	}
}

func runVersion(ctx context.Context, e env) error {
	fs := newFlags("version", e)
	asJSON := fs.Bool("json", false, "print the version, commit and formats as JSON")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	v := buildVersion()
	if *asJSON {
		out, err := json.MarshalIndent(struct {
			buildInfo
			Formats []storedFormat `json:"formats"`
		}{v, storedFormats()}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, string(out))
		return nil
	}
	fmt.Fprintln(e.stdout, v.line())
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "format\twrites\treads\t")
	for _, f := range storedFormats() {
		reads := fmt.Sprintf("%d–%d", f.Reads[0], f.Reads[1])
		if f.Reads[0] == f.Reads[1] {
			reads = fmt.Sprint(f.Reads[0])
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", f.Name, f.Writes, reads, f.Note)
	}
	return tw.Flush()
}

// buildInfo is what a binary says of itself.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// buildVersion is the release version (or the module's, "(devel)" for a
// build of a checkout) and the commit it was built from, from the build
// info Go records.
func buildVersion() buildInfo {
	v := buildInfo{Version: version, Commit: commit, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "(no build info)"
		}
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildInfo) line() string {
	line := "sessionlog " + v.Version
	if v.Commit != "" {
		modified := ""
		if v.Modified {
			modified = " (modified)"
		}
		line += fmt.Sprintf(" commit %.12s%s %s", v.Commit, modified, v.Time)
	}
	return line + " " + v.Go
}
