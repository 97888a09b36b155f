package session

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/internal/jsonscan"
)

// raws checks every verbatim value as a strict reader takes it: no
// member name twice in an object, valid UTF-8. JSON.parse would accept
// either, but the service's replies, and readers in other languages, are
// strict: what is stored must read everywhere.
func (v *fieldCheck) raws(e *Entry) {
	for _, f := range e.Extra {
		v.verbatim(root.at(f.Key), f.Value)
	}
	if e.Message != nil {
		v.rawsOf(root.at("message"), e.Message)
	}
	var usage *Usage
	switch b := e.Body.(type) {
	case *Compaction:
		v.raw(root.at("details"), b.Details)
		for i := range b.RetainedTail {
			v.rawsOf(root.at("retainedTail").item(i), &b.RetainedTail[i])
		}
		if b.SystemMessage != nil {
			v.rawsOf(root.at("systemMessage"), b.SystemMessage)
		}
		usage = b.Usage
	case *BranchSummary:
		v.raw(root.at("details"), b.Details)
		usage = b.Usage
	case *UsageRecord:
		usage = b.Usage
	case *CustomMessage:
		v.raw(root.at("details"), b.Details)
	case *Custom:
		v.raw(root.at("data"), b.Data)
	case *ContextEdit:
		if c := b.Replacement; c != nil {
			at := root.at("replacement")
			for _, f := range c.Extra {
				v.verbatim(at.at(f.Key), f.Value)
			}
			v.rawsOfContent(at.at("content"), c.Content)
		}
	}
	if usage != nil {
		for _, f := range usage.Extra {
			v.verbatim(root.at("usage").at(f.Key), f.Value)
		}
	}
}

func (v *fieldCheck) rawsOf(at path, m *Message) {
	v.raw(at.at("details"), m.Details())
	for _, f := range m.Extra {
		v.verbatim(at.at(f.Key), f.Value)
	}
	v.rawsOfContent(at.at("content"), m.Content)
}

func (v *fieldCheck) rawsOfContent(at path, c Content) {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		bp := at.item(i)
		if tc := b.ToolCall(); tc != nil {
			v.raw(bp.at("arguments"), tc.Arguments)
		}
		v.raw(bp, b.Verbatim())
		for _, f := range b.Extra {
			v.verbatim(bp.at(f.Key), f.Value)
		}
	}
}

// raw checks a verbatim slot, which may hold a reference to a JSON value.
func (v *fieldCheck) raw(at path, r Raw) {
	if v.ref(at, r, false, true) {
		return
	}
	v.verbatim(at, r)
}

// verbatim checks a member kept verbatim (references in Extra are checked
// by extra, which knows the member).
func (v *fieldCheck) verbatim(at path, r Raw) {
	if r == nil {
		return
	}
	d, n := shapeOf(r)
	if d > MaxDepth {
		v.fail(at, fmt.Sprintf("is nested %d deep; at most %d (what every client's JSON reader takes)", d, MaxDepth))
		return
	}
	if !v.parsed && !jsontext.Value(r).IsValid() {
		v.fail(at, "is not strict JSON (a member name twice, or invalid UTF-8)")
		return
	}
	if n != "" {
		v.fail(at, fmt.Sprintf("holds the number %s, beyond what a float64 (JavaScript's number) holds", clip(n)))
	}
}

// MaxDepth bounds the nesting of a member written (arrays and objects in
// arrays and objects), on every write path: a value nested deeper than a
// client's JSON reader takes (Python's stops near 1,000) would make the
// session unreadable there. Stored sessions are read whatever they hold.
const MaxDepth = 512

// shapeOf walks r's bytes once (strings passed over; r need not be valid:
// the validity check follows) for its deepest nesting of arrays and
// objects and its first number that a float64 cannot hold (1e400:
// JSON.parse makes it Infinity, which JSON cannot write back), "" for
// none. Only a number with an exponent or of 300 bytes or more can be
// such, and only those are parsed.
func shapeOf(r Raw) (most int, huge string) {
	depth := 0
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '"':
			i = jsonscan.StringEnd(r, i+1) // its closing quote
		case c == '[' || c == '{':
			if depth++; depth > most {
				most = depth
			}
		case c == ']' || c == '}':
			depth--
		case huge == "" && (c == '-' || c >= '0' && c <= '9'):
			j, exp := i+1, false
			for ; j < len(r) && isNumberByte(r[j]); j++ {
				exp = exp || r[j] == 'e' || r[j] == 'E'
			}
			if exp || j-i >= 300 {
				if _, err := strconv.ParseFloat(string(r[i:j]), 64); err != nil {
					huge = string(r[i:j])
				}
			}
			i = j - 1
		}
	}
	return most, huge
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}
