package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

func runCompletion(ctx context.Context, e env) error {
	fs := newFlags("completion", e)
	args, err := parseArgs(fs, e.args, 1, "a shell: bash, zsh or fish")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	flagsOf := map[string][]string{}
	for _, n := range names {
		flagsOf[n] = verbFlags(ctx, n)
	}
	switch args[0] {
	case "bash":
		writeBash(e.stdout, names, flagsOf)
	case "zsh":
		fmt.Fprintln(e.stdout, "#compdef sessionlog\nautoload -U bashcompinit && bashcompinit")
		writeBash(e.stdout, names, flagsOf)
	case "fish":
		for _, n := range names {
			fmt.Fprintf(e.stdout, "complete -c sessionlog -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(verbs[n].summary))
			for _, f := range flagsOf[n] {
				fmt.Fprintf(e.stdout, "complete -c sessionlog -n '__fish_seen_subcommand_from %s' -o %s\n", n, f)
			}
		}
	default:
		return usageError("no completion for %q: bash, zsh or fish", args[0])
	}
	return nil
}

// verbFlags are a verb's flag names, read from the flag set it makes when
// asked for its help.
func verbFlags(ctx context.Context, verb string) []string {
	var fs *flag.FlagSet
	verbs[verb].run(ctx, env{args: []string{"-h"}, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		onFlags: func(f *flag.FlagSet) { fs = f }})
	var out []string
	if fs != nil {
		fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	}
	slices.Sort(out)
	return out
}

func writeBash(w io.Writer, names []string, flagsOf map[string][]string) {
	fmt.Fprintln(w, "# sessionlog completion: source <(sessionlog completion bash)")
	fmt.Fprintln(w, "_sessionlog() {")
	fmt.Fprintln(w, `  local cur=${COMP_WORDS[COMP_CWORD]}`)
	fmt.Fprintln(w, `  if [ "$COMP_CWORD" -eq 1 ]; then`)
	fmt.Fprintf(w, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n", strings.Join(names, " "))
	fmt.Fprintln(w, "  fi")
	fmt.Fprintln(w, `  case "${COMP_WORDS[1]}" in`)
	for _, n := range names {
		var fl []string
		for _, f := range flagsOf[n] {
			fl = append(fl, "-"+f)
		}
		fmt.Fprintf(w, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", n, strings.Join(fl, " "))
	}
	fmt.Fprintln(w, "  esac")
	fmt.Fprintln(w, "  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "complete -F _sessionlog sessionlog")
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
