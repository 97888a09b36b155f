package outline

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// CallRunes bounds what a call is kept to act on (a row shows less: see
// clipAll, which keeps its end, where a path's file name is).
const CallRunes = 240

// subjects are the arguments that say what a tool call acts on, in the
// order they are looked for: the file (Claude Code's Read, Edit, Write;
// pi's read, edit, write), the command (Bash, bash; Codex's exec_command
// and shell), the address, the pattern or query (Grep, Glob, WebSearch:
// quoted, as a pattern is) before the directory it searches, what a task
// is for.
type subjectKey struct {
	key    string
	quoted bool
}

var subjects = []subjectKey{
	{"file_path", false}, {"notebook_path", false}, {"command", false}, {"cmd", false}, {"url", false},
	{"pattern", true}, {"query", true}, {"path", false}, {"description", false}, {"prompt", false}, {"skill", false}, {"name", false},
}

// Call is a tool call as its agent shows it: its name and what it acted
// on (Read(src/App.tsx), Bash(npm test), Grep("pattern"), apply_patch(a.go,
// b.go)), or its name alone when its arguments say nothing of the kind.
// One line, at most CallRunes runes of the subject.
func Call(name string, args session.Raw) string {
	name = OneLine(name, 60)
	if s := subject(args); s != "" {
		return name + "(" + s + ")"
	}
	return name
}

func subject(args session.Raw) string {
	if len(args) == 0 || args[0] != '{' {
		return ""
	}
	// One pass over the arguments' members, only the ones that may say
	// what the call acts on read: a Write's content or an Edit's strings
	// (most of a call's bytes) are skipped, never copied.
	dec := jsontext.NewDecoder(bytes.NewReader(args), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	best, bestAt, members := "", len(subjects), 0
	var patch string
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		members++
		key := name.String()
		at := slices.IndexFunc(subjects, func(s subjectKey) bool { return s.key == key })
		if (at < 0 || at >= bestAt) && key != "input" {
			if dec.SkipValue() != nil {
				return ""
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return ""
		}
		if key == "input" {
			json.Unmarshal(v, &patch)
			continue
		}
		if text := subjectText(v, subjects[at].quoted); text != "" {
			best, bestAt = text, at
		}
	}
	if members == 1 && patch != "" {
		// Codex's apply_patch: a patch, whose files say what it changed.
		if files := patchFiles(patch); len(files) > 0 {
			return OneLine(strings.Join(files, ", "), CallRunes)
		}
	}
	return best
}

// subjectText is an argument's value as a call shows it: a string, or a
// command's argv.
func subjectText(raw []byte, quoted bool) string {
	var v string
	if json.Unmarshal(raw, &v) != nil {
		var argv []string
		if json.Unmarshal(raw, &argv) != nil || len(argv) == 0 {
			return ""
		}
		v = shellLine(argv)
	}
	v = OneLine(v, CallRunes)
	if v != "" && quoted {
		return `"` + v + `"`
	}
	return v
}

// shellLine is a command given as argv: the script of a shell's -c (or
// -lc), else the words.
func shellLine(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") && strings.HasSuffix(argv[0], "sh") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// patchFiles are the files a patch in Codex's format adds, updates,
// deletes or moves to.
func patchFiles(patch string) []string {
	var files []string
	for _, line := range strings.Split(patch, "\n") {
		for _, p := range []string{"*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), p); ok && len(files) < 8 {
				files = append(files, strings.TrimSpace(f))
			}
		}
	}
	return files
}

// RelativeTo shows the files n's calls act on relative to cwd, the
// session's working directory, where they are under it: Read(src/App.tsx),
// as the agent showed them, not Read(/home/me/project/src/App.tsx).
func (n *Node) RelativeTo(cwd string) {
	cwd = strings.TrimRight(cwd, "/")
	if cwd == "" || len(n.Calls) == 0 {
		return
	}
	for i, c := range n.Calls {
		k := strings.IndexByte(c, '(')
		if k < 0 || !strings.HasPrefix(c[k+1:], cwd+"/") {
			continue
		}
		if rest := c[k+1+len(cwd)+1:]; rest != "" && rest[0] != ')' {
			n.Calls[i] = c[:k+1] + rest
		}
	}
}
