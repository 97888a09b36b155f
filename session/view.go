package session

import (
	"slices"
	"time"
)

// Node is one entry of a TreeView with its children.
type Node struct {
	Entry    *Entry
	Children []*Node
	Label    string // "" if unlabelled
	// OnBranch is true for entries on the path from the root to the leaf.
	OnBranch bool
}

// TreeView is the shape of a session for display: roots, children oldest
// first, labels and the current leaf. Leaf entries are bookkeeping and do
// not appear; entries written after one hang from the entry it names.
type TreeView struct {
	Roots []*Node
	Leaf  string
	// Apart are the branches written on other nodes while apart that
	// the current branch does not hold (Tree.Apart).
	Apart []Apart
}

// view builds the tree view. Entries whose parent is missing become roots,
// as in pi. The work is linear in the number of entries (plus sorting
// siblings).
func (t *Tree) view() (TreeView, error) {
	if err := t.requireFull(); err != nil {
		return TreeView{}, err
	}
	nodes := make([]*Node, len(t.entries))
	for i, e := range t.entries {
		if e.Type == TypeLeaf {
			continue
		}
		n := &Node{Entry: e}
		if l, ok := t.labels[e.ID]; ok {
			n.Label = l.label
		}
		nodes[i] = n
	}
	v := TreeView{Leaf: t.Leaf(), Apart: t.Apart()}
	for i, n := range nodes {
		if n == nil {
			continue
		}
		p := t.parent[i]
		for p >= 0 && nodes[p] == nil {
			p = t.parent[p] // skip leaf entries
		}
		if p < 0 {
			v.Roots = append(v.Roots, n)
		} else {
			nodes[p].Children = append(nodes[p].Children, n)
		}
	}
	for i := t.leaf; i >= 0; i = t.parent[i] {
		if nodes[i] != nil {
			nodes[i].OnBranch = true
		}
	}
	// Oldest child first; a stable sort keeps file order for equal times.
	stack := append([]*Node(nil), v.Roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(n.Children) > 1 {
			slices.SortStableFunc(n.Children, func(a, b *Node) int {
				return compareTime(a.Entry.Time(), b.Entry.Time())
			})
		}
		stack = append(stack, n.Children...)
	}
	return v, nil
}

func compareTime(a, b time.Time) int {
	switch {
	case a.Before(b):
		return -1
	case a.After(b):
		return 1
	}
	return 0
}
