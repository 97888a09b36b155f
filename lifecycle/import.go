package lifecycle

import (
	"context"
	"errors"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

// importBatch is how many entries go in one atomic append.
const importBatch = 1000

// Import creates session h in repo with the entries of t, in atomic
// batches, and its leaf; a failure leaves no half-imported session.
func Import(ctx context.Context, repo session.Repo, h session.Header, t *session.Tree) error {
	ctx = session.ForImport(ctx) // what loaded may be written: pi's labels of missing entries
	create := repo.Create
	if cc, ok := repo.(session.CopyCreator); ok {
		// The copy is not held as it is written: t is held already.
		create = cc.CreateForCopy
	}
	st, err := create(ctx, h)
	if err != nil {
		return err
	}
	err = importEntries(ctx, st, t)
	if cerr := st.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, repo.Delete(context.WithoutCancel(ctx), h.ID))
	}
	return nil
}

func importEntries(ctx context.Context, st session.Store, t *session.Tree) error {
	entries, err := t.Entries()
	if err != nil {
		return err
	}
	for len(entries) > 0 {
		n := min(len(entries), importBatch)
		if err := session.AppendAll(ctx, st, entries[:n]); err != nil {
			return err
		}
		entries = entries[n:]
	}
	// A file whose lines were not in parent-first order names a leaf the
	// append order does not give: record it as a move.
	leaf, err := st.Leaf(ctx)
	if err != nil || leaf == t.Leaf() {
		return err
	}
	s, err := session.New(st, system.Config())
	if err != nil {
		return err
	}
	_, err = s.MoveTo(ctx, t.Leaf())
	return err
}
