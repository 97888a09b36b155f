package outline

import (
	"fmt"
	"sort"
	"strings"
)

// Row is one line of the outline: a conversation entry, with the tool
// results that answer it and the bookkeeping entries beside it folded in.
type Row struct {
	Node Node
	// Depth is how many branch points lie above the row.
	Depth int
	// Branch is set on a row that starts a branch (a sibling of others).
	Branch bool
	// Results are the tool results paired with an assistant row's calls:
	// the entries' ids, and how many failed.
	Results      []string
	ResultErrors int
	// Folded counts the bookkeeping entries folded into the row, by kind
	// (a custom entry's custom type, else its type).
	Folded map[string]int
	// Leaf is set on the row that holds the session's leaf.
	Leaf bool
}

// Outline is a session's conversation outline.
type Outline struct {
	Rows []Row
	// Branches counts the points where the conversation branched (every
	// child beyond the first of an entry with several).
	Branches int
	// Entries is how many entries the outline covers; Folded how many of
	// them are folded into counts.
	Entries, Folded int
	// RowOf is the row each node (by its index in Build's input) is shown
	// in: its own, or the one it is paired with or folded into.
	RowOf []int
}

// Build outlines nodes (in the session's order, parents before children)
// whose leaf is leaf. Bookkeeping before the first conversation entry of
// a chain folds into that entry's row; a tree with no conversation at all
// is one row per root chain's first entry.
func Build(nodes []Node, leaf string) Outline {
	idx := make(map[string]int, len(nodes))
	for i := range nodes {
		idx[nodes[i].ID] = i
	}
	children := make([][]int, len(nodes))
	var roots []int
	for i := range nodes {
		if p, ok := idx[nodes[i].ParentID]; ok && nodes[i].ParentID != "" && p != i {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	// conv[i]: i's subtree holds a conversation entry or the leaf, so it
	// is shown rather than counted. Children come after their parents:
	// one pass from the end settles every subtree.
	conv := make([]bool, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		conv[i] = conv[i] || nodes[i].Conversation() || nodes[i].ID == leaf && leaf != ""
		if p, ok := idx[nodes[i].ParentID]; ok && p < i && conv[i] {
			conv[p] = true
		}
	}
	size := subtreeSizes(nodes, idx)
	o := Outline{Entries: len(nodes), RowOf: make([]int, len(nodes))}
	for i := range o.RowOf {
		o.RowOf[i] = -1
	}
	mark := func(i, row int) {
		for _, j := range subtree(children, i) {
			o.RowOf[j] = row
		}
	}
	type item struct {
		i      int
		depth  int
		branch bool
		row    int            // the row this chain's bookkeeping folds into (-1: none yet)
		fold   map[string]int // bookkeeping met before the chain's first row
		pend   []int          // and those entries
	}
	var stack []item
	shown := func(ch []int) (show []int, hidden []int) {
		for _, c := range ch {
			if conv[c] {
				show = append(show, c)
			} else {
				hidden = append(hidden, c)
			}
		}
		return show, hidden
	}
	showRoots, hiddenRoots := shown(roots)
	if len(showRoots) == 0 && len(roots) > 0 {
		showRoots, hiddenRoots = roots[:1], roots[1:] // nothing but bookkeeping: show where it starts
	}
	var rootFold map[string]int
	var rootPend []int
	for _, r := range hiddenRoots {
		rootFold = addSubtree(rootFold, nodes, children, r)
		rootPend = append(rootPend, subtree(children, r)...)
		o.Folded += size[r]
	}
	for k := len(showRoots) - 1; k >= 0; k-- {
		stack = append(stack, item{i: showRoots[k], row: -1, branch: len(showRoots) > 1, fold: rootFold, pend: rootPend})
		rootFold, rootPend = nil, nil
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := nodes[it.i]
		row := it.row
		switch {
		case row >= 0 && n.Role == "toolResult" && len(o.Rows[row].Node.Tools) > 0 && o.Rows[row].Node.Role == "assistant" &&
			len(o.Rows[row].Results) < len(o.Rows[row].Node.Tools):
			// A result of the row's calls: paired with them.
			r := &o.Rows[row]
			o.RowOf[it.i] = row
			r.Results = append(r.Results, n.ID)
			if n.Error {
				r.ResultErrors++
			}
			r.Leaf = r.Leaf || n.ID == leaf
		case row >= 0 && n.Role == "assistant" && n.Turn != "" && n.Turn == o.Rows[row].Node.Turn:
			// The next line of the row's API message (Claude Code writes
			// each of a message's blocks, parallel tool calls among them,
			// as a line of its own): the same turn, one row.
			r := &o.Rows[row]
			o.RowOf[it.i] = row
			if n.Summary != "" {
				r.Node.Summary = OneLine(r.Node.Summary+" "+n.Summary, SummaryRunes)
			}
			for k, tool := range n.Tools {
				r.Node.Tools = addTool(r.Node.Tools, tool)
				if k < len(n.Calls) {
					r.Node.Calls = addTool(r.Node.Calls, n.Calls[k])
				}
			}
			r.Node.Thinking = r.Node.Thinking || n.Thinking
			if n.Label != "" {
				r.Node.Label = n.Label
			}
			r.Leaf = r.Leaf || n.ID == leaf
		case row >= 0 && n.Role == "assistant" && continues(&o.Rows[row]):
			// Claude Code writes a turn's thinking, text and tool calls
			// as lines of their own: one row.
			r := &o.Rows[row]
			o.RowOf[it.i] = row
			r.Node.Summary = OneLine(r.Node.Summary+" "+n.Summary, SummaryRunes)
			r.Node.Tools, r.Node.Calls = n.Tools, n.Calls
			r.Node.Thinking = r.Node.Thinking || n.Thinking
			if n.Label != "" {
				r.Node.Label = n.Label
			}
			r.Leaf = r.Leaf || n.ID == leaf
		case n.Conversation() || row < 0 && (n.ID == leaf || !hasConvBelow(it.i, children, conv)):
			o.Rows = append(o.Rows, Row{Node: n, Depth: it.depth, Branch: it.branch, Folded: it.fold, Leaf: n.ID == leaf})
			row, it.fold, it.branch = len(o.Rows)-1, nil, false
			o.RowOf[it.i] = row
			for _, j := range it.pend {
				o.RowOf[j] = row
			}
			it.pend = nil
		default:
			o.Folded++
			if row >= 0 {
				o.Rows[row].Folded = addKind(o.Rows[row].Folded, n)
				o.RowOf[it.i] = row
				o.Rows[row].Leaf = o.Rows[row].Leaf || n.ID == leaf
			} else {
				it.fold = addKind(it.fold, n)
				it.pend = append(it.pend, it.i)
			}
		}
		show, hidden := shown(children[it.i])
		// Lines of the row's own API message beside what follows them
		// (Claude Code hangs a message's next tool call and the result of
		// the one before off the same line): the same turn, not a branch.
		var sameTurn []int
		if row >= 0 && len(show) > 1 && o.Rows[row].Node.Turn != "" {
			kept := show[:0:0]
			for _, c := range show {
				if nodes[c].Role == "assistant" && nodes[c].Turn == o.Rows[row].Node.Turn {
					sameTurn = append(sameTurn, c)
					continue
				}
				kept = append(kept, c)
			}
			show = kept
		}
		if row >= 0 && len(show) > 1 {
			// A result that answers the row's calls beside the turn that
			// goes on (Claude Code hangs a call's result, and its progress
			// lines, off the call): paired, not a branch.
			kept := show[:0:0]
			for _, c := range show {
				r := &o.Rows[row]
				if nodes[c].Role == "toolResult" && r.Node.Role == "assistant" && len(r.Results) < len(r.Node.Tools) &&
					!hasConvBelow(c, children, conv) {
					r.Results = append(r.Results, nodes[c].ID)
					if nodes[c].Error {
						r.ResultErrors++
					}
					r.Leaf = r.Leaf || nodes[c].ID == leaf
					o.Folded += size[c] - 1
					mark(c, row)
					for _, g := range children[c] {
						r.Folded = addSubtree(r.Folded, nodes, children, g)
					}
					continue
				}
				kept = append(kept, c)
			}
			show = kept
		}
		for _, h := range hidden {
			o.Folded += size[h]
			if row >= 0 {
				o.Rows[row].Folded = addSubtree(o.Rows[row].Folded, nodes, children, h)
				mark(h, row)
			} else {
				it.fold = addSubtree(it.fold, nodes, children, h)
				it.pend = append(it.pend, subtree(children, h)...)
			}
		}
		if len(show) > 1 {
			o.Branches += len(show) - 1
		}
		for k := len(show) - 1; k >= 0; k-- {
			next := item{i: show[k], depth: it.depth, row: row, fold: it.fold, pend: it.pend, branch: it.branch}
			if len(show) > 1 {
				next = item{i: show[k], depth: it.depth + 1, row: -1, branch: true}
				if k == 0 {
					next.fold, next.pend = it.fold, it.pend
				}
			}
			stack = append(stack, next)
		}
		for k := len(sameTurn) - 1; k >= 0; k-- {
			// First, so that the row has all its calls before their results.
			stack = append(stack, item{i: sameTurn[k], depth: it.depth, row: row, branch: it.branch})
		}
	}
	return o
}

// continues reports whether an assistant entry after r's continues its
// turn: r is an assistant row that called no tools yet.
func continues(r *Row) bool {
	return r.Node.Role == "assistant" && len(r.Node.Tools) == 0 && len(r.Results) == 0
}

// hasConvBelow reports whether a conversation entry (or the leaf) lies
// below i.
func hasConvBelow(i int, children [][]int, conv []bool) bool {
	for _, c := range children[i] {
		if conv[c] {
			return true
		}
	}
	return false
}

func addKind(m map[string]int, n Node) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[kindOf(n)]++
	return m
}

// subtree is the indices of the subtree at i.
func subtree(children [][]int, i int) []int {
	out := []int{}
	stack := []int{i}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, j)
		stack = append(stack, children[j]...)
	}
	return out
}

// addSubtree counts every entry of the subtree at i into m.
func addSubtree(m map[string]int, nodes []Node, children [][]int, i int) map[string]int {
	stack := []int{i}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		m = addKind(m, nodes[j])
		stack = append(stack, children[j]...)
	}
	return m
}

func subtreeSizes(nodes []Node, idx map[string]int) []int {
	size := make([]int, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		size[i]++
		if p, ok := idx[nodes[i].ParentID]; ok && p < i {
			size[p] += size[i]
		}
	}
	return size
}

// kindOf names a bookkeeping entry's kind: its custom type, else its type.
func kindOf(n Node) string {
	if n.CustomType != "" {
		return OneLine(n.CustomType, 60)
	}
	return OneLine(n.Type, 60)
}

// maxKinds bounds the kinds a row names; the rest are counted as others.
const maxKinds = 3

// Shown are an assistant's tool calls as a reader sees them: with what
// each acted on where that is known (Calls), else by name.
func (n Node) Shown() []string {
	if len(n.Calls) == len(n.Tools) {
		return n.Calls
	}
	return n.Tools
}

// Text is the row on one line, as `tree` and get_tree show it.
func (r Row) Text() string {
	n := r.Node
	var b strings.Builder
	b.WriteString(n.ID)
	b.WriteByte(' ')
	switch {
	case n.Role != "":
		b.WriteString(n.Role)
	case n.CustomType != "":
		b.WriteString(kindOf(n))
	default:
		b.WriteString(strings.ReplaceAll(OneLine(n.Type, 60), "_", " "))
	}
	if n.Summary != "" {
		b.WriteString(": ")
		b.WriteString(n.Summary)
	}
	if n.Thinking && n.Role == "assistant" {
		b.WriteString(" [thought]")
	}
	if len(n.Tools) > 0 {
		if n.Role == "toolResult" {
			fmt.Fprintf(&b, " ← %s", strings.Join(clipAll(n.Tools), ", "))
		} else {
			fmt.Fprintf(&b, " → %s", strings.Join(clipAll(n.Shown()), ", "))
			if len(r.Results) > 0 {
				fmt.Fprintf(&b, " (%d result", len(r.Results))
				if len(r.Results) > 1 {
					b.WriteByte('s')
				}
				if r.ResultErrors > 0 {
					fmt.Fprintf(&b, ", %d failed", r.ResultErrors)
				}
				b.WriteByte(')')
			}
		}
	}
	if n.Error && n.Role == "toolResult" {
		b.WriteString(" (failed)")
	}
	if n.Label != "" {
		fmt.Fprintf(&b, " [%s]", OneLine(n.Label, 60))
	}
	if len(r.Folded) > 0 {
		b.WriteString("  ")
		b.WriteString(FoldedText(r.Folded))
	}
	if r.Leaf {
		b.WriteString("  ← leaf")
	}
	return b.String()
}

// callShown bounds a tool call as a row shows it.
const callShown = 96

// clipMiddle cuts s to at most n runes from its middle: a call's name and
// the end of what it acted on (a path's file name) stay.
func clipMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n * 2 / 5
	return string(r[:head]) + "…" + string(r[len(r)-(n-head-1):])
}

func clipAll(names []string) []string {
	out := make([]string, 0, min(len(names), 8))
	for i, s := range names {
		if i == 8 {
			out = append(out, fmt.Sprintf("+%d", len(names)-8))
			break
		}
		out = append(out, clipMiddle(OneLine(s, 4*callShown), callShown))
	}
	return out
}

// FoldedText says what a row folds: "+12 (claude-code/progress 10, label 2)".
func FoldedText(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	total := 0
	for k, n := range m {
		all = append(all, kv{k, n})
		total += n
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	var parts []string
	others := 0
	for i, e := range all {
		if i >= maxKinds {
			others += e.n
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.n))
	}
	if others > 0 {
		parts = append(parts, fmt.Sprintf("others %d", others))
	}
	return fmt.Sprintf("+%d (%s)", total, strings.Join(parts, ", "))
}

// Lines renders the outline, a row a line, indented two spaces a depth
// (at most maxIndent levels deep, then numbered).
func (o Outline) Lines() []string {
	const maxIndent = 16
	lines := make([]string, len(o.Rows))
	for i, r := range o.Rows {
		prefix := strings.Repeat("  ", min(r.Depth, maxIndent))
		if r.Depth > maxIndent {
			prefix += fmt.Sprintf("[%d] ", r.Depth)
		}
		if r.Branch {
			prefix += "├ "
		}
		lines[i] = prefix + r.Text()
	}
	return lines
}
