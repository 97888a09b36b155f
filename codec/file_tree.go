package codec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentcore/sessionlog/session"
)

// Building a file's tree from its decoded lines: parents before children
// whatever the lines' order, and every duplicate, missing parent and cycle
// reported by line.

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
	var firsts map[string]int // id -> line number of first use, made on first need
	firstLines := func() map[string]int {
		if firsts == nil {
			firsts = make(map[string]int, len(lines))
			for _, l := range lines {
				if _, dup := firsts[l.entry.ID]; !dup {
					firsts[l.entry.ID] = l.no
				}
			}
		}
		return firsts
	}
	first := func(id string) int { return firstLines()[id] }
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
		issues = append(issues, explainWaiting(waiting, firstLines(), name)...)
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
