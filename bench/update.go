package bench

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/agentcore/sessionlog/filestore"
)

// The Last run section of BENCHMARKS.md is one run's tables, written by
// the command that ran it (-update): everything between these markers is
// replaced, nothing else in the file is touched.
const (
	lastRunBegin = "<!-- last run: begin; written by sessionlog bench -update, do not edit by hand -->"
	lastRunEnd   = "<!-- last run: end -->"
)

// UpdateLastRun replaces the Last run section of the Markdown file at path
// (between its markers, which must be there once each, in order) with the
// report's tables, headed by the command that made them.
func UpdateLastRun(path string, r *Report, command string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("bench: update: %w", err)
	}
	begin, end := bytes.Index(data, []byte(lastRunBegin)), bytes.Index(data, []byte(lastRunEnd))
	switch {
	case begin < 0 || end < 0:
		return fmt.Errorf("bench: update: %s has no Last run markers (%q … %q)", path, lastRunBegin, lastRunEnd)
	case end < begin || bytes.Count(data, []byte(lastRunBegin)) != 1 || bytes.Count(data, []byte(lastRunEnd)) != 1:
		return fmt.Errorf("bench: update: %s must hold each Last run marker once, the beginning first", path)
	}
	var section bytes.Buffer
	section.WriteString(lastRunBegin + "\n\nWritten by `" + command + "`.\n\n")
	r.Markdown(&section)
	section.WriteString("\n" + lastRunEnd)
	out := bytes.Join([][]byte{data[:begin], section.Bytes(), data[end+len(lastRunEnd):]}, nil)
	if err := filestore.WriteAtomic(path, out, 0o644); err != nil {
		return fmt.Errorf("bench: update: %w", err)
	}
	return nil
}

// CommandLine is how a run is named in the section it writes.
func CommandLine(args []string) string {
	return strings.TrimSpace("go run ./cmd/sessionlog bench " + strings.Join(args, " "))
}
