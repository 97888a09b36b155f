package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/stream/snapshots"
)

// version -json says which formats the build writes and reads, from the
// packages that own them: what an operator checks before an upgrade
// (docs/operations.md, Upgrades).
func TestVersionNamesFormats(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"version", "-json"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v struct {
		Version string         `json:"version"`
		Go      string         `json:"go"`
		Formats []storedFormat `json:"formats"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if v.Version == "" || !strings.HasPrefix(v.Go, "go") {
		t.Fatalf("version %q, go %q", v.Version, v.Go)
	}
	byName := map[string]storedFormat{}
	for _, f := range v.Formats {
		if f.Reads[0] < 1 || f.Reads[0] > f.Reads[1] || f.Writes != f.Reads[1] {
			t.Errorf("%s: writes %d, reads %v: a build reads what it writes, and every version since its oldest", f.Name, f.Writes, f.Reads)
		}
		byName[f.Name] = f
	}
	if s := byName["snapshots (tips included)"]; s.Writes != snapshots.Version || s.Reads[0] != snapshots.OldestVersion {
		t.Errorf("snapshots: %+v, want writes %d, reads from %d", s, snapshots.Version, snapshots.OldestVersion)
	}
	for _, want := range []string{"session files (pi's JSONL)", "entries on the stream (msgpack)", "backup manifests", "archive manifests", "index records", "tenants file", "follow state file"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("no %q in %s", want, out.String())
		}
	}
}
