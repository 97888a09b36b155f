package session

// View exposes the tree view for the tests of package session_test.
func (t *Tree) View() (TreeView, error) { return t.view() }
