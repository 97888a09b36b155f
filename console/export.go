package console

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"

	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session"
)

//go:embed export.html.tmpl
var exportText string

var exportTmpl = template.Must(template.New("export").Parse(exportText))

// ExportHTML writes one session as a self-contained HTML page, readable
// offline: its header, totals, the context of its leaf as the model sees
// it, and the whole tree (chains flat, branches indented and foldable,
// labels, the leaf marked), images included. Everything from the session
// is escaped as text; images are shown only as data URLs of image types.
func ExportHTML(w io.Writer, h session.Header, t *session.Tree) error {
	entries, err := t.Entries()
	if err != nil {
		return err
	}
	leaf := t.Leaf()
	var branch []*session.Entry
	if leaf != "" {
		if branch, err = t.Branch(leaf); err != nil {
			return err
		}
	}
	ctx := session.BuildContext(branch, session.ContextOptions{})
	page := exportPage{
		Title: cmpOr(t.Name(), h.ID), Header: h, Leaf: leaf, Stats: t.Stats(),
		Rows: exportRows(t, entries),
	}
	for _, m := range ctx.Messages {
		page.Context = append(page.Context, exportMessage(m))
	}
	// The page holds no control character of its own but newlines and
	// tabs: what is left of a session's escape codes and bidirectional
	// controls after escaping is made visible.
	var b strings.Builder
	if err := exportTmpl.Execute(&b, page); err != nil {
		return err
	}
	_, err = io.WriteString(w, outline.Visible(b.String()))
	return err
}

type exportPage struct {
	Title   string
	Header  session.Header
	Leaf    string
	Stats   session.Stats
	Context []exportMsg
	Rows    []exportRow
}

type exportMsg struct {
	Role   string
	Model  string
	Blocks []exportBlock
}

type exportBlock struct {
	Kind  string // text, thinking, tool, image, other
	Text  string
	Image template.URL
}

type exportRow struct {
	ID, Kind, Time, Label string
	Indent                int
	Leaf, OnBranch        bool
	Blocks                []exportBlock
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var base64Data = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)

func exportBlocks(c session.Content) []exportBlock {
	var out []exportBlock
	for _, b := range c.Blocks {
		switch t := b.Body.(type) {
		case nil:
			if b.Type == session.BlockText {
				out = append(out, exportBlock{Kind: "text", Text: b.Text})
			} else {
				out = append(out, exportBlock{Kind: "other", Text: "[" + b.Type + "]"})
			}
		case *session.ThinkingBlock:
			out = append(out, exportBlock{Kind: "thinking", Text: t.Thinking})
		case *session.ToolCallBlock:
			out = append(out, exportBlock{Kind: "tool", Text: fmt.Sprintf("%s(%s)", t.Name, t.Arguments)})
		case *session.ImageBlock:
			switch t.MimeType {
			case "image/png", "image/jpeg", "image/gif", "image/webp":
				if base64Data.MatchString(t.Data) {
					// Checked: an image type and base64 only, so the URL
					// cannot be anything but that image.
					out = append(out, exportBlock{Kind: "image", Image: template.URL("data:" + t.MimeType + ";base64," + t.Data)})
					continue
				}
			}
			out = append(out, exportBlock{Kind: "other", Text: "[image of type " + t.MimeType + "]"})
		default:
			out = append(out, exportBlock{Kind: "other", Text: "[" + b.Type + "]"})
		}
	}
	return out
}

func exportMessage(m *session.Message) exportMsg {
	out := exportMsg{Role: m.Role, Blocks: exportBlocks(m.Content)}
	if a := m.Assistant(); a != nil && (a.Provider != "" || a.Model != "") {
		out.Model = a.Provider + "/" + a.Model
	}
	if s := m.Summary(); s != nil && s.Summary != "" {
		out.Blocks = append(out.Blocks, exportBlock{Kind: "text", Text: s.Summary})
	}
	return out
}

// exportRows flattens the tree as the console does: children in append
// order, indented only where a node has more than one child. Iterative:
// a chain may be very long.
func exportRows(t *session.Tree, entries []*session.Entry) []exportRow {
	kids := map[string][]*session.Entry{}
	var roots []*session.Entry
	for _, e := range entries {
		if e.ParentID == "" || !t.Has(e.ParentID) {
			roots = append(roots, e)
		} else {
			kids[e.ParentID] = append(kids[e.ParentID], e)
		}
	}
	onBranch := map[string]bool{}
	if leaf := t.Leaf(); leaf != "" {
		if path, err := t.PathToRoot(leaf); err == nil {
			for _, e := range path {
				onBranch[e.ID] = true
			}
		}
	}
	type item struct {
		e      *session.Entry
		indent int
	}
	var stack []item
	first := 0
	if len(roots) > 1 {
		first = 1
	}
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{roots[i], first})
	}
	var rows []exportRow
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := it.e
		label, _ := t.Label(e.ID)
		r := exportRow{ID: e.ID, Kind: string(e.Type), Time: e.Timestamp, Label: label, Indent: min(it.indent, 40),
			Leaf: e.ID == t.Leaf(), OnBranch: onBranch[e.ID]}
		switch b := e.Body.(type) {
		case nil:
			switch {
			case e.Message != nil:
				r.Kind = e.Message.Role
				r.Blocks = exportBlocks(e.Message.Content)
			case e.Type == session.TypeLeaf:
				r.Blocks = []exportBlock{{Kind: "other", Text: "leaf moved to " + cmpOr(e.ParentID, "the start")}}
			default:
				r.Blocks = []exportBlock{{Kind: "other"}}
			}
		case *session.CustomMessage:
			r.Blocks = exportBlocks(b.Content)
		case *session.Compaction, *session.BranchSummary:
			r.Blocks = []exportBlock{{Kind: "text", Text: e.Summary()}}
		case *session.Label:
			r.Blocks = []exportBlock{{Kind: "other", Text: fmt.Sprintf("label %q → %s", b.Label, b.TargetID)}}
		case *session.ModelChange:
			r.Blocks = []exportBlock{{Kind: "other", Text: b.Provider + "/" + b.ModelID}}
		case *session.ThinkingLevelChange:
			r.Blocks = []exportBlock{{Kind: "other", Text: b.ThinkingLevel}}
		case *session.NameChange:
			r.Blocks = []exportBlock{{Kind: "other", Text: b.Name}}
		case *session.Custom:
			r.Blocks = []exportBlock{{Kind: "other", Text: strings.TrimSpace(b.CustomType)}}
		default:
			r.Blocks = []exportBlock{{Kind: "other"}}
		}
		rows = append(rows, r)
		ks := kids[e.ID]
		next := it.indent
		if len(ks) > 1 {
			next++
		}
		for i := len(ks) - 1; i >= 0; i-- {
			stack = append(stack, item{ks[i], next})
		}
	}
	return rows
}
