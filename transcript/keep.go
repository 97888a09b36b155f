package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/jsonscan"
	"github.com/agentcore/sessionlog/session"
)

// How an entry keeps its line without holding its text twice. A message's
// texts, tool outputs and images are most of a line's bytes, and its entry
// holds them already: the kept line (the member <format>Shared) has each
// string of at least minShared bytes that the entry's own JSON also holds,
// byte for byte, replaced by a reference to it: "\u0000" and the first 16
// hex digits of the string's SHA-256. A line kept that way is given back
// exactly when the entry's JSON holds the same strings; keep checks that it
// does before it shares anything, and keeps the line whole (the member
// <format>) otherwise.

// minShared is the shortest string a kept line shares with its entry.
const minShared = 256

// refLen is a reference's length as a JSON string token: a quote, \u0000,
// 16 hex digits, a quote.
const refLen = 1 + 6 + 16 + 1

// keep adds line to e as the member that keeps it, sharing what it can.
func (f Format) keep(e *session.Entry, line []byte) error {
	key, value := f.lineKey(), line
	// A line without a long string has nothing to share: the entry's
	// strings need not be known.
	if hasLongString(line) {
		template, err := sharedTemplate(e, line)
		if err != nil {
			return err
		}
		if template != nil {
			key, value = f.sharedKey(), template
		}
	}
	e.Extra = append(e.Extra, session.Field{Key: key, Value: session.Raw(bytes.Clone(value))})
	return nil
}

// sharedTemplate is line with the long strings e's JSON holds too replaced
// by references to them, or nil when it shares none or would not be given
// back exactly.
func sharedTemplate(e *session.Entry, line []byte) ([]byte, error) {
	pool, err := sharedStrings(e)
	if err != nil || len(pool) == 0 {
		return nil, err
	}
	// restore gives the line back exactly when each reference resolves to
	// the string it replaced (checked here: the pool's string under its
	// hash is that string) and no string of the line is one already (it
	// would be replaced, or be missing): then nothing else changes.
	shared, refLike := 0, false
	template := rewriteStrings(make([]byte, 0, len(line)), line, func(tok []byte) []byte {
		if isRef(tok) {
			refLike = true
		}
		if len(tok) < minShared {
			return nil
		}
		h := stringRef(tok)
		if p, ok := pool[h]; !ok || !bytes.Equal(p, tok) {
			return nil
		}
		shared++
		return []byte(`"\u0000` + h + `"`)
	})
	if shared == 0 || refLike {
		return nil, nil
	}
	return template, nil
}

// isRef reports whether a string token is shaped as a reference to a
// shared string (restore replaces those).
func isRef(tok []byte) bool { return len(tok) == refLen && bytes.HasPrefix(tok, []byte(`"\u0000`)) }

// hasLongString reports whether the JSON text line holds a string value
// of at least minShared bytes (as written).
func hasLongString(line []byte) bool {
	long := false
	eachStringValue(line, func(start, end int) bool {
		long = end-start >= minShared
		return !long
	})
	return long
}

func (f Format) sharedKey() string { return f.lineKey() + "Shared" }

// kept gives back the line e keeps: whole, or from its template and e's
// own strings.
func (f Format) kept(e *session.Entry) ([]byte, bool, error) {
	for _, fl := range e.Extra {
		switch fl.Key {
		case f.lineKey():
			return fl.Value, len(fl.Value) > 0, nil
		case f.sharedKey():
			pool, err := sharedStrings(e)
			if err != nil {
				return nil, true, err
			}
			line, err := restore(fl.Value, pool)
			if err != nil {
				return nil, true, fmt.Errorf("transcript: entry %s: %w", e.ID, err)
			}
			return line, true, nil
		}
	}
	return nil, false, nil
}

// sharedStrings are the string tokens of at least minShared bytes in e's
// JSON, but for the members that keep its line, by reference.
func sharedStrings(e *session.Entry) (map[string][]byte, error) {
	bare := *e
	bare.Extra = nil
	for _, fl := range e.Extra {
		if !isKeepKey(fl.Key) {
			bare.Extra = append(bare.Extra, fl)
		}
	}
	j, err := codec.EncodeEntry(&bare)
	if err != nil {
		return nil, err
	}
	pool := map[string][]byte{}
	eachStringValue(j, func(start, end int) bool {
		if tok := j[start:end]; len(tok) >= minShared {
			pool[stringRef(tok)] = tok
		}
		return true
	})
	return pool, nil
}

func isKeepKey(k string) bool {
	for _, f := range []Format{FormatClaudeCode, FormatCodex} {
		if k == f.lineKey() || k == f.sharedKey() {
			return true
		}
	}
	return false
}

func stringRef(tok []byte) string {
	sum := sha256.Sum256(tok)
	return hex.EncodeToString(sum[:8])
}

// restore puts the shared strings back into a template.
func restore(template []byte, pool map[string][]byte) ([]byte, error) {
	var missing error
	out := rewriteStrings(make([]byte, 0, len(template)*4), template, func(tok []byte) []byte {
		if !isRef(tok) {
			return nil
		}
		p, ok := pool[string(tok[7:23])]
		if !ok {
			missing = fmt.Errorf("a shared string (%s) is not in the entry", tok[7:23])
			return nil
		}
		return p
	})
	return out, missing
}

// rewriteStrings copies the JSON text src to dst with each string value
// (not member names) replaced by what repl returns for its token (quotes
// and escapes included), or kept when repl returns nil. src must be valid
// JSON.
func rewriteStrings(dst, src []byte, repl func(tok []byte) []byte) []byte {
	last := 0
	eachStringValue(src, func(i, end int) bool {
		if r := repl(src[i:end]); r != nil {
			dst = append(dst, src[last:i]...)
			dst = append(dst, r...)
			last = end
		}
		return true
	})
	return append(dst, src[last:]...)
}

// eachStringValue calls fn with where each string value (not member
// names) of the JSON text src starts and ends (its quotes included), until
// fn returns false.
func eachStringValue(src []byte, fn func(start, end int) bool) {
	for i := 0; i < len(src); {
		k := bytes.IndexByte(src[i:], '"')
		if k < 0 {
			return
		}
		i += k
		end := jsonscan.StringEnd(src, i+1) + 1 // past the closing quote
		j := end
		for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
			j++
		}
		if isName := j < len(src) && src[j] == ':'; !isName && !fn(i, min(end, len(src))) {
			return
		}
		i = end
	}
}
