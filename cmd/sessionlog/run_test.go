package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}`+"\nnot json\n"), 0o600)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown verb", []string{"frobnicate"}, 2, `unknown verb "frobnicate"`},
		{"missing argument", []string{"tree"}, 2, "want one session id or .jsonl file"},
		{"unknown flag", []string{"stats", "-nope", "x"}, 2, "flag provided but not defined"},
		{"missing file", []string{"tree", filepath.Join(dir, "none.jsonl")}, 1, "no such file"},
		{"bad line, strict", []string{"context", bad}, 1, "bad.jsonl:2"},
		{"check reports bad lines", []string{"check", bad}, 1, "1 bad line(s)"},
		{"gc: a negative snapshot grace", []string{"gc", "-data", dir, "-snapshot-grace", "-1s"}, 2, "-snapshot-grace -1s is negative"},
		{"gc: a snapshot grace that is no duration", []string{"gc", "-data", dir, "-snapshot-grace", "soon"}, 2, `invalid value "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr = %q, want it to mention %q", stderr, tt.wantErr)
			}
			if tt.wantCode == 1 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("error is not one line: %q", stderr)
			}
		})
	}
}

func TestDemoEndToEnd(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := run(t, "demo", "-data", dir)
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.export.jsonl"))
	if len(files) != 1 {
		t.Fatalf("demo exported %d files", len(files))
	}
	for _, want := range []string{"← leaf", "[task]", "branch summary", `"compaction"`, "compactionSummary", "0 problem(s)", "cost         $0.0375"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// The lenient and strict loads of the demo's own file agree.
	code, out2, _ := run(t, "tree", "-lenient", files[0])
	if code != 0 || !strings.Contains(out, out2[:40]) {
		t.Errorf("tree of the demo file: exit %d\n%s", code, out2)
	}
}
