package transcript

// Where each agent keeps a session on a machine, so that a session can be
// put back where its agent finds it (claude --resume, codex resume, pi's
// /resume), and how its working directory is mapped from one machine to
// another. Paths only: no I/O.

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ClaudeProjectDir is the folder under Claude Code's projects directory
// (~/.claude/projects) of the sessions started in cwd: every character
// that is not an ASCII letter or digit becomes '-', one per UTF-16 code
// unit, as Claude Code names it (a lossy name: /a_b and /a-b share it).
func ClaudeProjectDir(cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--") // a surrogate pair in JavaScript's string
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// PiSessionDir is the folder under pi's sessions directory
// (~/.pi/agent/sessions) of the sessions started in cwd:
// "--" + cwd without its leading separator, '/', '\' and ':' as '-',
// + "--" (pi's getDefaultSessionDir).
func PiSessionDir(cwd string) string {
	c := strings.TrimLeft(cwd, "/\\")
	c = strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(c)
	return "--" + c + "--"
}

// PiSessionFile is the name pi gives a session's file: its header's
// timestamp with ':' and '.' as '-', '_', the session id.
func PiSessionFile(timestamp, id string) string {
	return strings.NewReplacer(":", "-", ".", "-").Replace(timestamp) + "_" + id + ".jsonl"
}

// rolloutDate is the date in a Codex rollout's name.
var rolloutDate = regexp.MustCompile(`^rollout-(\d{4})-(\d{2})-(\d{2})T`)

// CodexSessionPath is where under Codex's sessions directory
// (~/.codex/sessions) a rollout of that file name goes: YYYY/MM/DD/name.
func CodexSessionPath(name string) (string, error) {
	m := rolloutDate.FindStringSubmatch(name)
	if m == nil || path.Base(name) != name {
		return "", fmt.Errorf("transcript: %q is not a Codex rollout's name (rollout-YYYY-MM-DDT…)", name)
	}
	return path.Join(m[1], m[2], m[3], name), nil
}

// PathMap maps working directories from one machine's layout to
// another's: a directory equal to From, or under it, is moved under To.
type PathMap struct{ From, To string }

// ParsePathMap reads FROM=TO.
func ParsePathMap(s string) (PathMap, error) {
	from, to, ok := strings.Cut(s, "=")
	from, to = strings.TrimRight(from, "/"), strings.TrimRight(to, "/")
	if !ok || from == "" || to == "" || !path.IsAbs(from) || !path.IsAbs(to) {
		return PathMap{}, fmt.Errorf("transcript: path map %q is not FROM=TO with two absolute paths", s)
	}
	return PathMap{From: from, To: to}, nil
}

// Map applies the first map that covers dir.
func Map(maps []PathMap, dir string) string {
	for _, m := range maps {
		if dir == m.From || strings.HasPrefix(dir, m.From+"/") {
			return m.To + dir[len(m.From):]
		}
	}
	return dir
}

// errNotJSONLine is a line of a session file that is not JSON.
var errNotJSONLine = errors.New("transcript: a line is not JSON")

// MapCwd rewrites the working directories of a session file's lines (the
// string members named "cwd", at any depth) by maps; every other byte
// stays as it is.
func MapCwd(data []byte, maps []PathMap) ([]byte, error) {
	if len(maps) == 0 {
		return data, nil
	}
	var out bytes.Buffer
	for line := range bytes.Lines(data) {
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			out.Write(line)
			continue
		}
		mapped, err := mapLine(body, maps)
		if err != nil {
			return nil, err
		}
		out.Write(mapped)
		out.Write(line[len(body):])
	}
	return out.Bytes(), nil
}

func mapLine(line []byte, maps []PathMap) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(line), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var out []byte
	last := 0
	for {
		k := dec.PeekKind()
		if k == 0 {
			break
		}
		// An object member's name is followed by its value: a "cwd"
		// string value is replaced where it stands.
		isName := dec.StackDepth() > 0 && func() bool { kind, n := dec.StackIndex(dec.StackDepth()); return kind == '{' && n%2 == 0 }()
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNotJSONLine, err)
		}
		if !isName || tok.Kind() != '"' || tok.String() != "cwd" || dec.PeekKind() != '"' {
			continue
		}
		vstart := dec.InputOffset()
		val, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNotJSONLine, err)
		}
		mapped := Map(maps, val.String())
		if mapped == val.String() {
			continue
		}
		enc, err := jsontext.AppendQuote(nil, mapped)
		if err != nil {
			return nil, err
		}
		// vstart is where the value's token begins, after the colon and
		// any space.
		vs := int(vstart) + bytes.IndexByte(line[vstart:], '"')
		out = append(append(out, line[last:vs]...), enc...)
		last = int(dec.InputOffset())
	}
	if out == nil {
		return line, nil
	}
	return append(out, line[last:]...), nil
}
