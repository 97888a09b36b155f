package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
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

// buildTree applies the lines parent-first, keeping file order where it
// can, and reports duplicates, missing parents and cycles. asPi keeps what
// pi's loader keeps (reporting it still): of entries sharing an id, the
// last; an entry whose parent is missing, as a root of its own.
func buildTree(tree *session.Tree, lines []fileLine, name string, asPi bool) []*LineError {
	var issues []*LineError
	report := func(l fileLine, err error) {
		issues = append(issues, &LineError{File: name, Line: l.no, ID: l.entry.ID, Err: err})
	}
	if asPi {
		lines = lastOfEachID(lines, report)
	}
	// Most lines go straight into the tree, which finds their duplicates
	// and missing parents itself; what is not applied at once is kept in
	// held (id -> line number) for the lines after it. The line number
	// of every id's first use is worked out only when a report needs it.
	held := map[string]int{}
	var firsts map[string]int
	first := func(id string) int {
		if firsts == nil {
			firsts = make(map[string]int, len(lines))
			for _, l := range lines {
				if _, dup := firsts[l.entry.ID]; !dup {
					firsts[l.entry.ID] = l.no
				}
			}
		}
		return firsts[id]
	}
	skipped := map[string]bool{}
	waiting := map[string][]fileLine{} // parent id -> children not yet applied
	last := ""                         // last applied entry in file order
	lastNo := 0

	// apply applies l and then the children waiting for it, and reports
	// false, having applied nothing, when l's own parent is not in the
	// tree yet.
	apply := func(l fileLine) bool {
		// Iterative over waiting children, so deep chains cannot overflow.
		stack := []fileLine{l}
		for n := 0; len(stack) > 0; n++ {
			l := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			validated := l.invalid == nil && l.valid.Entry() == l.entry
			if n == 0 && !validated && l.entry.ParentID != "" && !tree.Has(l.entry.ParentID) {
				return false // what else is wrong with it is told once its parent is there
			}
			var err error
			switch {
			case validated:
				err = tree.ApplyValidated(l.valid)
			case l.invalid != nil:
				err = l.invalid
			default:
				err = tree.Apply(l.entry)
			}
			switch {
			case err == nil:
			case errors.Is(err, session.ErrDuplicateID):
				report(l, fmt.Errorf("%w: %q was first used on line %d", session.ErrDuplicateID, l.entry.ID, first(l.entry.ID)))
				continue
			case n == 0 && errors.Is(err, session.ErrParentNotFound):
				return false
			default:
				report(l, err)
				held[l.entry.ID] = l.no
				markSkipped(l.entry.ID, skipped, waiting, func(c fileLine) {
					report(c, fmt.Errorf("%w: parent %q was skipped", session.ErrParentNotFound, c.entry.ParentID))
				})
				continue
			}
			if l.no > lastNo {
				last, lastNo = l.entry.ID, l.no
			}
			kids := waiting[l.entry.ID]
			delete(waiting, l.entry.ID)
			for i := len(kids) - 1; i >= 0; i-- {
				delete(held, kids[i].entry.ID)
				stack = append(stack, kids[i])
			}
		}
		return true
	}

	for _, l := range lines {
		e := l.entry
		if no, dup := held[e.ID]; dup {
			report(l, fmt.Errorf("%w: %q was first used on line %d", session.ErrDuplicateID, e.ID, no))
			continue
		}
		switch {
		case e.ParentID != "" && skipped[e.ParentID]:
			report(l, fmt.Errorf("%w: parent %q was skipped", session.ErrParentNotFound, e.ParentID))
			held[e.ID] = l.no
			markSkipped(e.ID, skipped, waiting, func(c fileLine) {
				report(c, fmt.Errorf("%w: parent %q was skipped", session.ErrParentNotFound, c.entry.ParentID))
			})
		case !apply(l):
			waiting[e.ParentID] = append(waiting[e.ParentID], l)
			held[e.ID] = l.no
		}
	}
	if asPi {
		// Entries whose parent is in no line: roots, as pi keeps them.
		var orphans []fileLine
		for parent, kids := range waiting {
			if first(parent) == 0 { // in no line
				orphans = append(orphans, kids...)
				delete(waiting, parent)
			}
		}
		slices.SortFunc(orphans, func(a, b fileLine) int { return a.no - b.no })
		for _, l := range orphans {
			report(l, fmt.Errorf("%w: parent %q is in no line: kept as a root, as pi's loader does", session.ErrParentNotFound, l.entry.ParentID))
			l.entry.ParentID = ""
			l.valid = session.Validated{} // validated again when applied
			apply(l)
		}
	}
	if len(waiting) > 0 {
		first("")
		issues = append(issues, explainWaiting(waiting, firsts, name)...)
	}
	if last != "" {
		_ = tree.SetLeaf(last) // last exists: it was applied
	}
	if asPi {
		// Kept in both modes (the label is inert, and pi keeps it), but
		// worth saying when reading a file that may be damaged.
		for _, id := range tree.DanglingLabels() {
			e, _ := tree.Get(id)
			issues = append(issues, &LineError{File: name, Line: first(id), ID: id,
				Err: fmt.Errorf("%w: label of %q, which is in no line: kept, as pi's loader does", ErrMalformedLine, e.TargetID())})
		}
	}
	sortIssues(issues)
	return issues
}

func markSkipped(id string, skipped map[string]bool, waiting map[string][]fileLine, report func(fileLine)) {
	stack := []string{id}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		skipped[id] = true
		for _, c := range waiting[id] {
			report(c)
			stack = append(stack, c.entry.ID)
		}
		delete(waiting, id)
	}
}

// explainWaiting reports entries that were never applied: their parent is
// missing from the file, or their parent links loop.
func explainWaiting(waiting map[string][]fileLine, seen map[string]int, name string) []*LineError {
	byID := map[string]fileLine{}
	for _, kids := range waiting {
		for _, k := range kids {
			byID[k.entry.ID] = k
		}
	}
	// verdict per id: the error for it.
	verdict := map[string]error{}
	var issues []*LineError
	for id := range byID {
		if verdict[id] != nil {
			continue
		}
		// Walk up until an entry with a verdict, a parent outside the
		// waiting set, or a repeat (a cycle).
		var path []string
		onPath := map[string]int{}
		cur := id
		var cause error
		for {
			if v := verdict[cur]; v != nil {
				cause = v
				break
			}
			if at, again := onPath[cur]; again {
				cycle := path[at:]
				cerr := fmt.Errorf("%w: %v", session.ErrCycle, cycle)
				for _, c := range cycle {
					verdict[c] = cerr
				}
				path = path[:at]
				cause = fmt.Errorf("%w: an ancestor is in a cycle", session.ErrCycle)
				break
			}
			onPath[cur] = len(path)
			path = append(path, cur)
			l := byID[cur]
			p := l.entry.ParentID
			if _, waits := byID[p]; !waits {
				if _, inFile := seen[p]; !inFile {
					verdict[cur] = fmt.Errorf("%w: %q is not in the file", session.ErrParentNotFound, p)
				} else {
					verdict[cur] = fmt.Errorf("%w: parent %q was skipped", session.ErrParentNotFound, p)
				}
				path = path[:len(path)-1]
				cause = fmt.Errorf("%w: an ancestor's parent is missing", session.ErrParentNotFound)
				break
			}
			cur = p
		}
		for _, p := range path {
			if verdict[p] == nil {
				verdict[p] = cause
			}
		}
	}
	for id, l := range byID {
		issues = append(issues, &LineError{File: name, Line: l.no, ID: id, Err: verdict[id]})
	}
	return issues
}

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

// lastOfEachID drops every line whose id a later line uses again (pi's
// loader indexes entries by id: the last wins), reporting each.
func lastOfEachID(lines []fileLine, report func(fileLine, error)) []fileLine {
	lastAt := make(map[string]int, len(lines))
	for _, l := range lines {
		lastAt[l.entry.ID] = l.no
	}
	out := lines[:0:0]
	for _, l := range lines {
		if at := lastAt[l.entry.ID]; at != l.no {
			report(l, fmt.Errorf("%w: %q is used again on line %d, which pi's loader keeps", session.ErrDuplicateID, l.entry.ID, at))
			continue
		}
		out = append(out, l)
	}
	return out
}
