package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session"
)

func runTree(ctx context.Context, e env) error {
	var o treeOptions
	flags := func(fs *flag.FlagSet) {
		fs.IntVar(&o.width, "width", 72, "characters of each entry's text to show")
		fs.BoolVar(&o.entries, "entries", false, "show every entry as the tree holds it, bookkeeping included, instead of the conversation")
		fs.IntVar(&o.depth, "depth", 0, "with -entries: show entries at most this many steps from their root (0: all)")
		fs.BoolVar(&o.branch, "branch", false, "show only the current branch: the path from the root to the leaf")
		fs.BoolVar(&o.json, "json", false, "print the tree as JSON: the header, the leaf and every node shown, flat with its parentId")
		fs.BoolVar(&o.noPager, "no-pager", false, "never page the output (on a terminal it goes through $PAGER, or less)")
	}
	return sessionVerb(ctx, e, "tree", flags, func(sess *session.Session) error {
		if o.depth < 0 {
			return usageError("-depth must not be negative")
		}
		return paged(e, o.noPager || o.json, func(w io.Writer) error { return printSession(ctx, w, sess, o) })
	})
}

// treeOptions are the tree verb's.
type treeOptions struct {
	width, depth                   int
	branch, json, noPager, entries bool
}

func printSession(ctx context.Context, w io.Writer, sess *session.Session, o treeOptions) error {
	v, err := sess.Tree(ctx)
	if err != nil {
		return err
	}
	h, err := sess.Header(ctx)
	if err != nil {
		return err
	}
	name, _ := sess.Name(ctx)
	if o.branch {
		v = branchOnly(v)
	}
	if o.json {
		return printTreeJSON(w, h, name, v, o.depth)
	}
	title := name
	if title == "" {
		if st, err := sess.Stats(ctx); err == nil {
			title = st.FirstUser // as the list names a session without a name
		}
	}
	fmt.Fprintf(w, "session %s %s\n", h.ID, quoteIf(outline.OneLine(title, 100)))
	if v.Leaf == "" && len(v.Roots) > 0 {
		// After move -root no entry carries the marker: say where it is.
		fmt.Fprintln(w, "← leaf: before the first entry (the next append starts a new root)")
	}
	if o.entries {
		printTree(w, v, o.width, o.depth)
	} else {
		printOutline(w, v, h.Cwd, o.width)
	}
	printApart(w, v.Apart)
	return nil
}

// printApart says which branches other nodes wrote while apart, and why
// the leaf is where it is.
func printApart(w io.Writer, apart []session.Apart) {
	for _, a := range apart {
		fmt.Fprintf(w, "⑂ branch written apart on %s: its tip %s (%s) is not on the current branch; the leaf is the branch written last\n", a.Origin, a.Leaf, a.At)
	}
}

// printOutline draws the conversation (package outline): a row a
// message, tool results with their calls, bookkeeping counted, branches
// only where the conversation branched.
func printOutline(w io.Writer, v session.TreeView, cwd string, width int) {
	var nodes []outline.Node
	stack := slices.Clone(v.Roots)
	slices.Reverse(stack)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		on := outline.FromEntry(n.Entry, n.Label)
		on.RelativeTo(cwd)
		on.Summary = outline.OneLine(on.Summary, width)
		nodes = append(nodes, on)
		for i := len(n.Children) - 1; i >= 0; i-- {
			stack = append(stack, n.Children[i])
		}
	}
	o := outline.Build(nodes, v.Leaf)
	for _, line := range o.Lines() {
		fmt.Fprintln(w, line)
	}
	if o.Folded > 0 || o.Branches > 0 {
		fmt.Fprintf(w, "(%d entries in %d rows, %d bookkeeping entries counted into them, %d branches; -entries shows every entry)\n",
			o.Entries, len(o.Rows), o.Folded, o.Branches)
	}
}

func quoteIf(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

// printTree draws the tree: a chain of only children stays at one indent,
// and siblings branch with ├─ and └─. It walks with an explicit stack so a
// 100,000-entry chain cannot overflow.
// depth > 0 leaves out entries more than depth steps from their root.
func printTree(w io.Writer, v session.TreeView, width, depth int) {
	type item struct {
		n      *session.Node
		prefix string // drawn before the node
		indent string // continues below it
		depth  int    // steps from its root
	}
	var stack []item
	push := func(nodes []*session.Node, indent string, d int) {
		if depth > 0 && d > depth {
			return
		}
		if len(nodes) == 1 {
			stack = append(stack, item{nodes[0], indent, indent, d})
			return
		}
		for i := len(nodes) - 1; i >= 0; i-- {
			if i == len(nodes)-1 {
				stack = append(stack, item{nodes[i], indent + "└─ ", indent + "   ", d})
			} else {
				stack = append(stack, item{nodes[i], indent + "├─ ", indent + "│  ", d})
			}
		}
	}
	push(v.Roots, "", 1)
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fmt.Fprintf(w, "%s%s\n", it.prefix, describeNode(it.n, v.Leaf, width))
		push(it.n.Children, it.indent, it.depth+1)
	}
}

func describeNode(n *session.Node, leaf string, width int) string {
	e := n.Entry
	var b strings.Builder
	b.WriteString(e.ID)
	b.WriteString(" ")
	b.WriteString(entrySummary(e))
	s := truncate(b.String(), width)
	if n.Label != "" {
		s += " [" + outline.OneLine(n.Label, labelWidth) + "]"
	}
	if e.ID == leaf {
		s += "  ← leaf"
	}
	return s
}

// entrySummary is one line saying what an entry is.
func entrySummary(e *session.Entry) string {
	switch e.Type {
	case session.TypeMessage:
		if e.Message == nil {
			return "message"
		}
		m := e.Message
		text := m.Content.Paragraphs()
		for _, b := range m.Content.Blocks {
			if tc := b.ToolCall(); tc != nil {
				text += " →" + tc.Name
			}
		}
		return m.Role + ": " + text
	}
	switch b := e.Body.(type) {
	case *session.ModelChange:
		return "model → " + b.Provider + "/" + b.ModelID
	case *session.ThinkingLevelChange:
		return "thinking → " + b.ThinkingLevel
	case *session.ActiveToolsChange:
		return "tools → " + strings.Join(b.ActiveTools, ",")
	case *session.Compaction:
		return fmt.Sprintf("compaction (%d tokens): %s", b.TokensBefore, b.Summary)
	case *session.BranchSummary:
		return "branch summary: " + b.Summary
	case *session.Custom:
		return "custom " + b.CustomType
	case *session.CustomMessage:
		return "custom message " + b.CustomType + ": " + b.Content.Paragraphs()
	case *session.Label:
		if b.Label == "" {
			return "label cleared on " + b.TargetID
		}
		return fmt.Sprintf("label %q on %s", b.Label, b.TargetID)
	case *session.NameChange:
		return fmt.Sprintf("name → %q", b.Name)
	case *session.UsageRecord:
		var tokens int64
		if b.Usage != nil {
			tokens = b.Usage.TotalTokens
		}
		return fmt.Sprintf("usage %s %s/%s (%d tokens) %s", b.Kind, b.Provider, b.Model, tokens, b.Note)
	case *session.ContextEdit:
		if b.Replacement == nil || b.Replacement.Remove {
			return "context edit: " + b.TargetID + " left out"
		}
		return "context edit of " + b.TargetID + ": " + b.Replacement.Content.Paragraphs()
	}
	return string(e.Type)
}

// labelWidth bounds a label shown beside an entry.
const labelWidth = 60

// truncate is s on one line of at most width runes (0: any), with what
// could drive a terminal replaced (outline.OneLine), so an entry's text
// cannot move the cursor or forge a row of the tree.
func truncate(s string, width int) string {
	if width <= 0 {
		width = math.MaxInt
	}
	return outline.OneLine(s, width)
}
