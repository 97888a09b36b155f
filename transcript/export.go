package transcript

import (
	"bytes"
	"fmt"
	json "github.com/go-json-experiment/json/v1"
	"strings"

	"github.com/agentcore/sessionlog/session"
)

// Line is the line of format f an entry keeps, if it keeps one: a message,
// name or compaction keeps it beside its members, a custom entry of the
// format's type is it. The parts a line with several tool results became,
// and entries appended since the import, keep none.
func Line(f Format, e *session.Entry) ([]byte, bool, error) {
	if e == nil {
		return nil, false, nil
	}
	if c := e.Custom(); c != nil {
		if strings.HasPrefix(c.CustomType, f.customPrefix()) {
			return c.Data, len(c.Data) > 0, nil
		}
		return nil, false, nil
	}
	return f.kept(e)
}

// Export writes a session's entries, in order, as a file of format f (a
// Claude Code transcript or a Codex rollout): the lines its import kept.
// skipped counts the entries that keep none and are not part of a line
// (appended since the import, by pi or a client). A session holding none of the
// format's lines is ErrNotImported.
func Export(f Format, entries []*session.Entry) (data []byte, skipped int, err error) {
	if f != FormatClaudeCode && f != FormatCodex {
		return nil, 0, fmt.Errorf("%w: %q is not a transcript format", ErrUnknownFormat, f)
	}
	var buf bytes.Buffer
	lines := 0
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e != nil {
			ids[e.ID] = true
		}
	}
	for _, e := range entries {
		line, ok, err := Line(f, e)
		if err != nil {
			return nil, skipped, err
		}
		if !ok {
			if !isPart(e, ids) {
				skipped++
			}
			continue
		}
		buf.Write(line)
		buf.WriteByte('\n')
		lines++
	}
	if lines == 0 {
		return nil, skipped, fmt.Errorf("%w: %s (%s)", ErrNotImported, f, heldFormats(entries))
	}
	return buf.Bytes(), skipped, nil
}

// isPart reports whether e is one of the entries a line with several
// tool results became before its last (<line's id>~<n>).
func isPart(e *session.Entry, ids map[string]bool) bool {
	if e == nil {
		return false
	}
	base, n, ok := strings.Cut(e.ID, "~")
	return ok && n != "" && strings.Trim(n, "0123456789") == "" && ids[base]
}

// heldFormats says which formats' lines entries keep, for the error of
// an export in another.
func heldFormats(entries []*session.Entry) string {
	var held []string
	for _, f := range []Format{FormatClaudeCode, FormatCodex} {
		for _, e := range entries {
			if _, ok, _ := Line(f, e); ok {
				held = append(held, string(f))
				break
			}
		}
	}
	if len(held) == 0 {
		return "it was not imported from a transcript: export it as pi"
	}
	return "it holds " + strings.Join(held, " and ") + " lines: export it with -format " + held[0]
}

// RawLine is the line of format f an entry keeps, as it is held: whole,
// or the template whose long strings (at least minShared bytes) are
// references to the entry's own. The members a reader of a line's
// bookkeeping wants (ids, timestamps, usage, model) are short and so
// always as written: RawLine spares such a reader the restore, which
// encodes the whole entry again.
func RawLine(f Format, e *session.Entry) ([]byte, bool) {
	if e == nil {
		return nil, false
	}
	if c := e.Custom(); c != nil {
		if strings.HasPrefix(c.CustomType, f.customPrefix()) {
			return c.Data, len(c.Data) > 0
		}
		return nil, false
	}
	for _, fl := range e.Extra {
		if fl.Key == f.lineKey() || fl.Key == f.sharedKey() {
			return fl.Value, len(fl.Value) > 0
		}
	}
	return nil, false
}

// MessageID is the id of the API message a Claude Code line an entry
// keeps is part of ("" for none): Claude Code writes one line per
// content block of a message, each with the message's id.
func MessageID(e *session.Entry) string {
	line, ok := RawLine(FormatClaudeCode, e)
	if !ok {
		return ""
	}
	var l struct {
		Message *struct {
			ID string `json:"id"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Message == nil {
		return ""
	}
	return l.Message.ID
}
