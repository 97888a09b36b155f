package session

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
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
	if d := depthOf(r); d > MaxDepth {
		v.fail(at, fmt.Sprintf("is nested %d deep; at most %d (what every client's JSON reader takes)", d, MaxDepth))
		return
	}
	if !jsontext.Value(r).IsValid() {
		v.fail(at, "is not strict JSON (a member name twice, or invalid UTF-8)")
		return
	}
	if n := hugeNumber(r); n != "" {
		v.fail(at, fmt.Sprintf("holds the number %s, beyond what a float64 (JavaScript's number) holds", clip(n)))
	}
}

// MaxDepth bounds the nesting of a member written (arrays and objects in
// arrays and objects), on every write path: a value nested deeper than a
// client's JSON reader takes (Python's stops near 1,000) would make the
// session unreadable there. Stored sessions are read whatever they hold.
const MaxDepth = 512

// depthOf is the deepest nesting of arrays and objects in r, strings
// passed over (r need not be valid: the validity check follows).
func depthOf(r Raw) int {
	depth, most, inString := 0, 0, false
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > most {
				most = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}

// hugeNumber returns the first number of the valid JSON value r that a
// float64 cannot hold (1e400: JSON.parse makes it Infinity, which JSON
// cannot write back), or "".
func hugeNumber(r Raw) string {
	if !bytes.ContainsAny(r, "eE") && len(r) < 300 {
		return "" // no exponent, and too short for 309 digits
	}
	d := jsontext.NewDecoder(bytes.NewReader(r))
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return ""
		}
		if tok.Kind() == '0' {
			if _, err := strconv.ParseFloat(tok.String(), 64); err != nil {
				return tok.String()
			}
		}
	}
}
