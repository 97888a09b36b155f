package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/agentcore/sessionlog/session"
)

type fileLine struct {
	no    int
	entry *session.Entry
	// valid is entry validated on its own, or invalid why it is not
	// (found while decoding, in parallel; reported when applying).
	valid   session.Validated
	invalid error
}

// DecodeFile parses the bytes of a session file (JSON lines, any version
// pi wrote, migrated to 3). name is used in errors only; mode says what
// becomes of bad lines.
func DecodeFile(data []byte, name string, mode Mode, opts ...FileOption) (*File, error) {
	var o fileOptions
	for _, opt := range opts {
		opt(&o)
	}
	ld := &File{}
	var header *session.Header
	var lines []fileLine
	var issues []*LineError
	report := func(no int, id string, err error) {
		issues = append(issues, &LineError{File: name, Line: no, ID: id, Err: err})
	}
	// pi's migration indexes compaction targets by position among the
	// parsed lines, header included.
	var parsedIdx []int // index into lines per parsed position (-1: header)

	segs, validEnd := splitLines(data)
	ld.ValidEnd = validEnd
	if mode == Lenient {
		// pi's loader skips lines that are not JSON, those before the
		// header too: the first that is must be the header.
		for len(segs) > 1 && !json.Valid(segs[0].text) {
			report(segs[0].no, "", fmt.Errorf("%w: not JSON, before the header (pi's loader skips it)", ErrMalformedLine))
			segs = segs[1:]
		}
	}
	if len(segs) > 0 {
		first := segs[0]
		h, err := DecodeHeader(first.text)
		if err != nil {
			return nil, &LineError{File: name, Line: first.no, Err: fmt.Errorf("%w: %w", ErrBadHeader, err)}
		}
		if !first.complete {
			ld.MissingNewline = true
		}
		header = h
		ld.Version = h.Version
		parsedIdx = append(parsedIdx, -1)
		segs = segs[1:]
	}
	// Entries of older versions change in migrating: those are validated
	// when applied, current ones while decoding.
	current := header != nil && header.Version >= session.CurrentVersion
	decoded := decodeAll(segs, header != nil && header.Version <= 1, current, o)
	lines = make([]fileLine, 0, len(segs))
	for i, sg := range segs {
		e, err := decoded[i].entry, decoded[i].err
		if mode == Lenient && errors.Is(err, errNoParent) {
			// pi keeps an entry without a parentId as a root of its own.
			if le, lerr := DecodeLegacyEntry(sg.text); lerr == nil && le.ID != "" {
				report(sg.no, le.ID, fmt.Errorf("%w: no parentId: kept as a root, as pi's loader does", ErrMalformedLine))
				e, err = le, nil
				decoded[i].valid, decoded[i].invalid = session.Validate(e)
			}
		}
		if err != nil {
			if !sg.complete {
				ld.Torn = true
				ld.ValidEnd = int64(sg.start)
				issues = append(issues, &LineError{File: name, Line: sg.no, Err: fmt.Errorf("%w: %w", ErrTornWrite, err)})
				break
			}
			if !errors.Is(err, ErrLineTooLong) {
				err = fmt.Errorf("%w: %w", ErrMalformedLine, err)
			}
			report(sg.no, "", err)
			continue
		}
		if !sg.complete {
			ld.MissingNewline = true
		}
		if !current {
			parsedIdx = append(parsedIdx, len(lines))
		}
		lines = append(lines, fileLine{no: sg.no, entry: e, valid: decoded[i].valid, invalid: decoded[i].invalid})
	}
	if header == nil {
		return nil, &LineError{File: name, Line: 1, Err: fmt.Errorf("%w: the file has no lines", ErrBadHeader)}
	}
	if header.Version > session.CurrentVersion {
		ld.Version = header.Version
	}
	if header.Version < session.CurrentVersion {
		migrate(header, lines, parsedIdx)
		ld.Migrated = true
	}

	tree := session.NewTree(*header)
	tree.Grow(len(lines))
	issues = append(issues, buildTree(tree, lines, name, mode == Lenient)...)
	ld.Tree = tree
	ld.Issues = issues
	if mode == Strict {
		var bad []*LineError
		for _, is := range issues {
			if !isTorn(is) {
				bad = append(bad, is)
			}
		}
		if len(bad) > 0 {
			return nil, &FileError{File: name, Issues: bad}
		}
	}
	return ld, nil
}

// segment is one non-blank line of a file.
type segment struct {
	no       int // 1-based line number
	start    int // offset of its first byte
	text     []byte
	complete bool // ends with a newline
}

// splitLines cuts data into its non-blank lines. validEnd is the offset
// just past the last newline.
func splitLines(data []byte) ([]segment, int64) {
	segs := make([]segment, 0, bytes.Count(data, []byte{'\n'})+1)
	var validEnd int64
	no := 0
	for off := 0; off < len(data); {
		no++
		nl := bytes.IndexByte(data[off:], '\n')
		sg := segment{no: no, start: off, complete: nl >= 0}
		if sg.complete {
			sg.text = data[off : off+nl]
			off += nl + 1
			validEnd = int64(off)
		} else {
			sg.text = data[off:]
			off = len(data)
		}
		if len(bytes.TrimSpace(sg.text)) > 0 {
			segs = append(segs, sg)
		}
	}
	return segs, validEnd
}

type decoded struct {
	entry   *session.Entry
	err     error
	valid   session.Validated
	invalid error
}

// decodeAll decodes the lines, and validates each entry on its own when
// validate is set, in parallel when run spreads the work: lines are
// independent, and decoding is most of the cost of opening a long session.
func decodeAll(segs []segment, legacy, validate bool, o fileOptions) []decoded {
	out := make([]decoded, len(segs))
	decode := DecodeEntry
	switch {
	case legacy:
		decode = DecodeLegacyEntry
	case o.shared:
		decode = func(line []byte) (*session.Entry, error) {
			r := getReader(line)
			r.shared = true
			return decodeEntry(r, false, false)
		}
	}
	run := o.run
	if run == nil {
		run = func(n int, part func(lo, hi int)) { part(0, n) }
	}
	run(len(segs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sg := segs[i]
			if len(sg.text) > maxLineBytes {
				// Decoding costs several times a line: not this one.
				out[i].err = fmt.Errorf("%w: %d bytes (at most %d)", ErrLineTooLong, len(sg.text), maxLineBytes)
				continue
			}
			out[i].entry, out[i].err = decode(sg.text)
			if out[i].err == nil && validate {
				out[i].valid, out[i].invalid = session.Validate(out[i].entry)
			}
		}
	})
	return out
}

func isTorn(is *LineError) bool { return errors.Is(is.Err, ErrTornWrite) }

func sortIssues(is []*LineError) {
	// Insertion order is mostly sorted already; a stable sort by line
	// keeps reports readable.
	for i := 1; i < len(is); i++ {
		for j := i; j > 0 && is[j].Line < is[j-1].Line; j-- {
			is[j], is[j-1] = is[j-1], is[j]
		}
	}
}

// migrate brings entries of a version 1 or 2 file to version 3 as pi's
// loader does: v1 entries get ids and a parent chain in file order, and
// compaction indexes become ids; v2 "hookMessage" messages become "custom".
// Ids are derived from the session id and position, so a read-only load of
// an old file gives the same ids every time.
func migrate(h *session.Header, lines []fileLine, parsedIdx []int) {
	if h.Version <= 1 {
		used := map[string]bool{}
		prev := ""
		for i := range lines {
			e := lines[i].entry
			e.ID = legacyID(h.ID, i, used)
			e.ParentID = prev
			prev = e.ID
		}
		for i := range lines {
			e := lines[i].entry
			c := e.Compaction()
			if c == nil {
				continue
			}
			for k, f := range e.Extra {
				if f.Key != "firstKeptEntryIndex" {
					continue
				}
				if n, err := strconv.Atoi(string(f.Value)); err == nil && n >= 0 && n < len(parsedIdx) && parsedIdx[n] >= 0 {
					c.FirstKeptEntryID = lines[parsedIdx[n]].entry.ID
				}
				e.Extra = append(e.Extra[:k:k], e.Extra[k+1:]...)
				break
			}
		}
	}
	for i := range lines {
		e := lines[i].entry
		if m := e.Message; m != nil && m.Role == "hookMessage" {
			// Read again as the custom message it is now, so that its
			// customType, display and details are a custom message's
			// members, not unknown ones.
			m.Role = session.RoleCustom
			if j, err := EncodeMessage(m); err == nil {
				if c, err := DecodeMessage(j); err == nil {
					e.Message = c
				}
			}
		}
	}
	h.Version = session.CurrentVersion
}

func legacyID(sessionID string, pos int, used map[string]bool) string {
	for attempt := 0; ; attempt++ {
		f := fnv.New32a()
		fmt.Fprintf(f, "%s/%d/%d", sessionID, pos, attempt)
		id := fmt.Sprintf("%08x", f.Sum32())
		if !used[id] {
			used[id] = true
			return id
		}
	}
}
