package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
)

// branchOnly is the view of the current branch alone: the path from the
// root to the leaf, as one chain.
func branchOnly(v session.TreeView) session.TreeView {
	var path []*session.Node
	nodes := v.Roots
	for {
		var next *session.Node
		for _, n := range nodes {
			if n.OnBranch {
				next = n
				break
			}
		}
		if next == nil {
			break
		}
		path = append(path, next)
		nodes = next.Children
	}
	out := session.TreeView{Leaf: v.Leaf}
	for i := len(path) - 1; i >= 0; i-- {
		c := *path[i]
		if i < len(path)-1 {
			c.Children = []*session.Node{out.Roots[0]}
		} else {
			c.Children = nil
		}
		out.Roots = []*session.Node{&c}
	}
	return out
}

// treeNode is one node of `tree -json`.
type treeNode struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentId,omitempty"`
	Type      string `json:"type"`
	Role      string `json:"role,omitempty"`
	Timestamp string `json:"timestamp"`
	Label     string `json:"label,omitempty"`
	OnBranch  bool   `json:"onBranch,omitempty"`
	Summary   string `json:"summary"`
}

func printTreeJSON(w io.Writer, h session.Header, name string, v session.TreeView, depth int) error {
	out := struct {
		Session string        `json:"session"`
		Name    string        `json:"name,omitempty"`
		Cwd     string        `json:"cwd,omitempty"`
		Leaf    string        `json:"leaf"`
		Nodes   []treeNode    `json:"nodes"`
		Apart   []slapi.Apart `json:"apart,omitempty"`
	}{Session: h.ID, Name: name, Cwd: h.Cwd, Leaf: v.Leaf, Nodes: []treeNode{}, Apart: slapi.ApartOf(v.Apart)}
	type item struct {
		n *session.Node
		d int
	}
	var stack []item
	for i := len(v.Roots) - 1; i >= 0; i-- {
		stack = append(stack, item{v.Roots[i], 1})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := it.n.Entry
		tn := treeNode{ID: e.ID, ParentID: e.ParentID, Type: string(e.Type), Timestamp: e.Timestamp, Label: it.n.Label, OnBranch: it.n.OnBranch, Summary: truncate(entrySummary(e), 200)}
		if e.Message != nil {
			tn.Role = e.Message.Role
		}
		out.Nodes = append(out.Nodes, tn)
		if depth > 0 && it.d >= depth {
			continue
		}
		for i := len(it.n.Children) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Children[i], it.d + 1})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// paged runs print into the verb's stdout, through a pager when stdout is
// a terminal (and not off): $PAGER, or less, which quits at once when the
// output fits the screen.
func paged(e env, off bool, print func(w io.Writer) error) error {
	pager := pagerFor(e.stdout, os.Getenv)
	if off || pager == nil {
		return print(e.stdout)
	}
	// The pager draws on the terminal itself; what it is given is made
	// visible first, as e.stdout would.
	var buf bytes.Buffer
	vis := newVisibleWriter(&buf)
	if err := print(vis); err != nil {
		return err
	}
	vis.Flush()
	cmd := exec.Command(pager[0], pager[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &buf, terminal(e.stdout), e.stderr
	if err := cmd.Run(); err != nil {
		_, err = e.stdout.Write(buf.Bytes()) // the pager failed: print it all
		return err
	}
	return nil
}

// pagerFor is the pager command for w: nil unless w is a terminal and a
// pager is found.
func pagerFor(w io.Writer, getenv func(string) string) []string {
	if terminal(w) == nil {
		return nil
	}
	if p := strings.Fields(getenv("PAGER")); len(p) > 0 {
		if _, err := exec.LookPath(p[0]); err == nil {
			return p
		}
	}
	if _, err := exec.LookPath("less"); err == nil {
		return []string{"less", "-FRX"}
	}
	return nil
}
