package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The command's conventions: no arguments is a usage error; help, -h and
// help VERB print to stdout and exit 0; version and --version say which
// build this is.
func TestConventions(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{nil, 2, "", "usage: sessionlog <verb>"},
		{[]string{"help"}, 0, "usage: sessionlog <verb>", ""},
		{[]string{"--help"}, 0, "usage: sessionlog <verb>", ""},
		{[]string{"help", "tree"}, 0, "usage: sessionlog tree", ""},
		{[]string{"tree", "-h"}, 0, "-width", ""},
		{[]string{"append", "--help"}, 0, "-entry", ""},
		{[]string{"version"}, 0, "sessionlog ", ""},
		{[]string{"--version"}, 0, "sessionlog ", ""},
		{[]string{"nope"}, 2, "", "unknown verb"},
		{[]string{"tree", "-nope"}, 2, "", "flag provided but not defined"},
		{[]string{"serve", "-data", os.TempDir() + "/sessionlog-conventions-never", "-repair-stuck", "-1s"}, 2, "", "-repair-stuck and -repair-dead must not be negative"},
		{[]string{"serve", "-data", os.TempDir() + "/sessionlog-conventions-never", "-keep-local", "cwd=/p"}, 2, "", "they need -hub"},
		{[]string{"serve", "-data", os.TempDir() + "/sessionlog-conventions-never", "-domain", "d", "-hub", "nats-leaf://127.0.0.1:1", "-keep-local", "label=x"}, 2, "", `sync rule "label=x": want cwd=/absolute/path`},
		{[]string{"serve", "-data", os.TempDir() + "/sessionlog-conventions-never", "-domain", "d", "-hub", "nats-leaf://127.0.0.1:1", "-sync-only", "agent=vim"}, 2, "", "the agents are claude-code, codex"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.errOut) {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant %d, %q, %q", code, out.String(), errb.String(), tt.code, tt.out, tt.errOut)
			}
			if tt.out == "" && out.Len() > 0 {
				t.Fatalf("printed on stdout after a mistake: %q", out.String())
			}
		})
	}
}

// No flag's help reads as if a bool took an argument: flag shows a word
// in backquotes as the argument's name (`-seq sessionlog wait` once).
func TestBoolFlagsReadAsBools(t *testing.T) {
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	checked := 0
	for _, n := range names {
		var fs *flag.FlagSet
		verbs[n].run(context.Background(), env{args: []string{"-h"}, stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{},
			onFlags: func(f *flag.FlagSet) { fs = f }})
		if fs == nil {
			t.Errorf("%s made no flag set", n)
			continue
		}
		fs.VisitAll(func(f *flag.Flag) {
			b, ok := f.Value.(interface{ IsBoolFlag() bool })
			if !ok || !b.IsBoolFlag() {
				return
			}
			checked++
			if arg, _ := flag.UnquoteUsage(f); arg != "" {
				t.Errorf("%s -%s: its help names an argument %q (a word in backquotes)", n, f.Name, arg)
			}
		})
	}
	if checked < 20 {
		t.Fatalf("only %d bool flags seen", checked)
	}
}

// Completion scripts name every verb and its flags, and bash parses its.
func TestCompletion(t *testing.T) {
	bash := mustRun(t, "", "", "completion", "bash")
	for _, want := range []string{"complete -F _sessionlog sessionlog", "search", "-width", "-entry"} {
		if !strings.Contains(bash, want) {
			t.Errorf("bash completion lacks %q", want)
		}
	}
	if sh, err := exec.LookPath("bash"); err == nil {
		f := filepath.Join(t.TempDir(), "c.bash")
		if err := writeFile(f, bash); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v\n%s", err, out)
		}
	}
	if fish := mustRun(t, "", "", "completion", "fish"); !strings.Contains(fish, "__fish_seen_subcommand_from tree' -o width") {
		t.Errorf("fish completion:\n%s", fish)
	}
	if zsh := mustRun(t, "", "", "completion", "zsh"); !strings.HasPrefix(zsh, "#compdef sessionlog") {
		t.Errorf("zsh completion starts %q", zsh[:40])
	}
	if code, _, stderr := runIn(t, "", "", "completion", "tcsh"); code != 2 || !strings.Contains(stderr, "bash, zsh or fish") {
		t.Errorf("completion tcsh: %d %q", code, stderr)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
