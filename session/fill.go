package session

import (
	"context"
	"fmt"
)

// Fill completes entries built by a client before they are appended as one
// batch: a missing id is drawn from the IDSource (unused in the session and
// in the batch), a missing timestamp comes from the clock (so does a
// message's), and a missing parent is the previous entry of the batch — or,
// for the first entry, parent, which is the leaf when nil. fromLeaf reports
// that the first entry's parent was taken from the leaf (the append may then
// follow the leaf if another writer moves it).
func (s *Session) Fill(ctx context.Context, entries []*Entry, parent *string) (fromLeaf bool, err error) {
	batch := make(map[string]bool, len(entries))
	for i, e := range entries {
		if e != nil && e.ID != "" {
			if batch[e.ID] {
				return false, fmt.Errorf("%w: %q is given to two entries of the batch (the second is entry %d)", ErrDuplicateID, e.ID, i)
			}
			batch[e.ID] = true
		}
	}
	now := s.cfg.Clock.Now()
	prev := ""
	for i, e := range entries {
		if e == nil {
			return false, fmt.Errorf("%w: entry %d is nil", ErrInvalidEntry, i)
		}
		if e.ID == "" {
			if e.ID, err = s.newBatchID(ctx, batch); err != nil {
				return false, err
			}
			batch[e.ID] = true
		}
		if e.Timestamp == "" {
			e.Timestamp = FormatTime(now)
		}
		if e.Message != nil && e.Message.Timestamp == 0 {
			e.Message.Timestamp = now.UnixMilli()
		}
		switch {
		case e.ParentID != "":
		case i > 0:
			e.ParentID = prev
		case parent != nil:
			e.ParentID = *parent
		default:
			if e.ParentID, err = s.store.Leaf(ctx); err != nil {
				return false, err
			}
			fromLeaf = true
		}
		prev = e.ID
	}
	return fromLeaf, nil
}

// newBatchID is newID that also avoids the ids of a batch being built.
func (s *Session) newBatchID(ctx context.Context, batch map[string]bool) (string, error) {
	for range maxIDTries {
		id, err := s.newID(ctx)
		if err != nil || !batch[id] {
			return id, err
		}
	}
	return "", fmt.Errorf("session: id source gave %d ids already in the batch", maxIDTries)
}
