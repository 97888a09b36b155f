package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/outline"
)

// TreeInput is get_tree's arguments.
type TreeInput struct {
	Session   string `json:"session" jsonschema:"the session's id"`
	MaxTokens int    `json:"max_tokens,omitempty" jsonschema:"about how many tokens of outline to return; rows far from the leaf are left out first"`
}

// TreeOutput is a session's conversation outline and where its leaf is.
type TreeOutput struct {
	Session  string   `json:"session"`
	Title    string   `json:"title,omitempty"` // its name, else its first message`
	Leaf     string   `json:"leaf"`
	Sequence uint64   `json:"sequence"`
	Entries  int      `json:"entries"`
	Branches int      `json:"branches"`
	Labels   []string `json:"labels,omitempty"`
	// Rows is the outline's rows in all; Folded the bookkeeping entries
	// counted into them; Omitted the rows left out to fit max_tokens.
	Rows    int    `json:"rows"`
	Folded  int    `json:"folded"`
	Omitted int    `json:"omitted"`
	Outline string `json:"outline"`
}

// treePages bounds the pages of a tree read.
const treePages = 100

// maxLabels bounds the labels a reply lists.
const maxLabels = 50

func (t *tools) getTree(ctx context.Context, _ *mcp.CallToolRequest, in TreeInput) (*mcp.CallToolResult, TreeOutput, error) {
	if err := checkSession(in.Session); err != nil {
		return nil, TreeOutput{}, err
	}
	budget := in.MaxTokens
	if budget <= 0 {
		budget = t.cfg.DefaultTreeTokens
	}
	budget = min(budget, t.cfg.MaxTokens)
	var nodes []outline.Node
	var shown []string // the labels as the text shows them: quoted
	out := TreeOutput{Session: in.Session}
	for offset, i := 0, 0; i < treePages; i++ {
		var page api.TreeReply
		if err := t.svc.Call(ctx, api.OpTree, api.TreeRequest{Session: in.Session, Offset: offset}, &page); err != nil {
			return nil, TreeOutput{}, err
		}
		if offset > 0 && page.Sequence != out.Sequence {
			offset, nodes, shown, out.Labels = 0, nil, nil, nil // moved on between pages: read it again
			continue
		}
		out.Leaf, out.Sequence = page.Leaf, page.Sequence
		for _, n := range page.Nodes {
			nodes = append(nodes, outline.Node{ID: n.ID, ParentID: n.ParentID, Type: n.Type, Role: n.Role, Label: n.Label,
				CustomType: n.CustomType, Summary: n.Summary, Tools: n.Tools, Calls: n.Calls, Turn: n.Turn, Thinking: n.Thinking, Error: n.Error})
			if n.Label != "" && n.Type != "label" && len(out.Labels) < maxLabels { // the label in force on an entry
				out.Labels = append(out.Labels, fmt.Sprintf("%s on %s", outline.OneLine(n.Label, 60), n.ID))
				shown = append(shown, fmt.Sprintf("%s on %s", strconv.Quote(outline.OneLine(n.Label, 60)), inline(n.ID)))
			}
		}
		if page.Next == 0 {
			break
		}
		offset = page.Next
	}
	o := outline.Build(nodes, out.Leaf)
	out.Entries, out.Branches, out.Rows, out.Folded = o.Entries, o.Branches, len(o.Rows), o.Folded
	lines := o.Lines()
	// The first row (where the session started), then the rows nearest
	// the leaf's end that fit (about four bytes a token).
	used, keep := 0, len(lines)
	if len(lines) > 0 {
		used = len(lines[0])/4 + 1
	}
	for keep > 1 {
		n := len(lines[keep-1])/4 + 1
		if used+n > budget {
			break
		}
		used += n
		keep--
	}
	var b strings.Builder
	if len(lines) > 0 {
		b.WriteString(lines[0])
		b.WriteByte('\n')
	}
	if keep > 1 {
		out.Omitted = keep - 1
		fmt.Fprintf(&b, "[%d rows left out to fit max_tokens %d]\n", out.Omitted, budget)
	}
	for _, l := range lines[max(keep, 1):] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	out.Outline = b.String()
	var head strings.Builder
	fmt.Fprintf(&head, "session %s", inline(out.Session))
	// Its title, as people see it: its name, else the first message its
	// user typed (a session that cannot be opened now is named by its id).
	var opened api.SessionReply
	if t.svc.Call(ctx, api.OpOpen, api.SessionRequest{Session: in.Session}, &opened) == nil {
		if title := cmp.Or(opened.Session.Name, opened.Session.FirstMessage); title != "" {
			out.Title = outline.OneLine(title, 100)
			fmt.Fprintf(&head, " %s", strconv.Quote(out.Title))
		}
	}
	fmt.Fprintf(&head, ": %d entries in %d rows (%d bookkeeping entries counted into them), %d branches, leaf %s\n",
		out.Entries, out.Rows, out.Folded, out.Branches, inline(out.Leaf))
	if len(out.Labels) > 0 {
		fmt.Fprintf(&head, "labels: %s\n", strings.Join(shown, "; "))
	}
	return text(head.String() + out.Outline), out, nil
}
