package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/service"
)

// TreeInput is get_tree's arguments.
type TreeInput struct {
	Session string `json:"session" jsonschema:"the session's id"`
}

// TreeOutput is a session's tree as an outline, and where its leaf is.
type TreeOutput struct {
	Session  string   `json:"session"`
	Leaf     string   `json:"leaf"`
	Sequence uint64   `json:"sequence"`
	Entries  int      `json:"entries"`
	Branches int      `json:"branches"`
	Labels   []string `json:"labels,omitempty"`
	// Outline is the text outline; Truncated says it stops early.
	Outline   string `json:"outline"`
	Truncated bool   `json:"truncated,omitempty"`
}

// treePages bounds the pages of a tree read.
const treePages = 100

func (t *tools) getTree(ctx context.Context, _ *mcp.CallToolRequest, in TreeInput) (*mcp.CallToolResult, TreeOutput, error) {
	if err := checkSession(in.Session); err != nil {
		return nil, TreeOutput{}, err
	}
	var nodes []service.TreeNode
	out := TreeOutput{Session: in.Session}
	for offset, i := 0, 0; i < treePages; i++ {
		var page service.TreeReply
		if err := t.svc.Call(ctx, service.OpTree, service.TreeRequest{Session: in.Session, Offset: offset}, &page); err != nil {
			return nil, TreeOutput{}, err
		}
		if offset > 0 && page.Sequence != out.Sequence {
			offset, nodes = 0, nil // moved on between pages: read it again
			continue
		}
		out.Leaf, out.Sequence = page.Leaf, page.Sequence
		nodes = append(nodes, page.Nodes...)
		if page.Next == 0 {
			break
		}
		offset = page.Next
	}
	out.Entries = len(nodes)
	children := map[string][]int{}
	var roots []int
	for i, n := range nodes {
		if n.ParentID == "" {
			roots = append(roots, i)
		} else {
			children[n.ParentID] = append(children[n.ParentID], i)
		}
		if n.Label != "" && n.Type != "label" { // the label in force on an entry
			out.Labels = append(out.Labels, fmt.Sprintf("%s on %s", n.Label, n.ID))
		}
	}
	for _, k := range children {
		if len(k) > 1 {
			out.Branches += len(k) - 1
		}
	}
	var b strings.Builder
	lines := 0
	// A chain of single children is one line: its first and last entries
	// and how many between; branches are indented below it.
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if lines >= t.cfg.MaxTreeLines {
			out.Truncated = true
			return
		}
		first, n, count := nodes[i], nodes[i], 1
		for len(children[n.ID]) == 1 && n.ID != out.Leaf {
			i = children[n.ID][0]
			n = nodes[i]
			count++
		}
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), describe(first))
		if count > 1 {
			fmt.Fprintf(&b, " … %d entries … %s", count-2, describe(n))
		}
		if n.ID == out.Leaf {
			b.WriteString("  ← leaf")
		}
		b.WriteByte('\n')
		lines++
		for _, c := range children[n.ID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[the outline stops at %d lines]\n", t.cfg.MaxTreeLines)
	}
	out.Outline = b.String()
	var head strings.Builder
	fmt.Fprintf(&head, "session %s: %d entries, %d branches, leaf %s\n", out.Session, out.Entries, out.Branches, out.Leaf)
	if len(out.Labels) > 0 {
		fmt.Fprintf(&head, "labels: %s\n", strings.Join(out.Labels, "; "))
	}
	return text(head.String() + out.Outline), out, nil
}

// describe is one node: its id and what it is.
func describe(n service.TreeNode) string {
	what := n.Type
	if n.Role != "" {
		what = n.Role
	}
	s := n.ID + " " + what
	if n.Label != "" && n.Type != "label" {
		s += fmt.Sprintf(" [%s]", n.Label)
	}
	return s
}
