package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/session"
)

func runTree(ctx context.Context, e env) error {
	var width *int
	flags := func(fs *flag.FlagSet) { width = fs.Int("width", 72, "characters of each entry's text to show") }
	return sessionVerb(ctx, e, "tree", flags, func(sess *session.Session) error { return printSession(ctx, e, sess, *width) })
}

func printSession(ctx context.Context, e env, sess *session.Session, width int) error {
	v, err := sess.Tree(ctx)
	if err != nil {
		return err
	}
	h, err := sess.Header(ctx)
	if err != nil {
		return err
	}
	name, _ := sess.Name(ctx)
	fmt.Fprintf(e.stdout, "session %s %s\n", h.ID, quoteIf(name))
	printTree(e.stdout, v, width)
	return nil
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
func printTree(w io.Writer, v session.TreeView, width int) {
	type item struct {
		n      *session.Node
		prefix string // drawn before the node
		indent string // continues below it
	}
	var stack []item
	push := func(nodes []*session.Node, indent string) {
		if len(nodes) == 1 {
			stack = append(stack, item{nodes[0], indent, indent})
			return
		}
		for i := len(nodes) - 1; i >= 0; i-- {
			if i == len(nodes)-1 {
				stack = append(stack, item{nodes[i], indent + "└─ ", indent + "   "})
			} else {
				stack = append(stack, item{nodes[i], indent + "├─ ", indent + "│  "})
			}
		}
	}
	push(v.Roots, "")
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fmt.Fprintf(w, "%s%s\n", it.prefix, describeNode(it.n, v.Leaf, width))
		push(it.n.Children, it.indent)
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
		s += fmt.Sprintf(" [%s]", n.Label)
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
		text := m.Text()
		for _, b := range m.Content.Blocks {
			if b.Type == session.BlockToolCall {
				text += " →" + b.Name
			}
		}
		return m.Role + ": " + text
	case session.TypeModelChange:
		return "model → " + e.Provider + "/" + e.ModelID
	case session.TypeThinkingLevelChange:
		return "thinking → " + e.ThinkingLevel
	case session.TypeActiveToolsChange:
		return "tools → " + strings.Join(e.ActiveTools, ",")
	case session.TypeCompaction:
		return fmt.Sprintf("compaction (%d tokens): %s", e.TokensBefore, e.Summary)
	case session.TypeBranchSummary:
		return "branch summary: " + e.Summary
	case session.TypeCustom:
		return "custom " + e.CustomType
	case session.TypeCustomMessage:
		return "custom message " + e.CustomType + ": " + e.Content.Text()
	case session.TypeLabel:
		if e.Label == "" {
			return "label cleared on " + e.TargetID
		}
		return fmt.Sprintf("label %q on %s", e.Label, e.TargetID)
	case session.TypeSessionInfo:
		return fmt.Sprintf("name → %q", e.Name)
	}
	return string(e.Type)
}

func truncate(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}
