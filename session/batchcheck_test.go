package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Batches checked together are each checked after those before them that
// passed — never after one that failed — and none is applied.
func TestBatchCheck(t *testing.T) {
	msg := func(id, parent string) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:00.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: 1}}
	}
	tr := session.NewTree(sessiontest.TestHeader("t"))
	if err := tr.Apply(msg("root", "")); err != nil {
		t.Fatal(err)
	}
	c := tr.CheckBatches(context.Background())
	steps := []struct {
		batch []*session.Entry
		want  error
	}{
		{[]*session.Entry{msg("a", "root")}, nil},
		{[]*session.Entry{msg("b", "a"), msg("c", "b")}, nil},                             // after a batch passed
		{[]*session.Entry{msg("d", "c"), msg("e", "nowhere")}, session.ErrParentNotFound}, // fails whole
		{[]*session.Entry{msg("f", "d")}, session.ErrParentNotFound},                      // d failed with its batch
		{[]*session.Entry{msg("d", "c")}, nil},                                            // d's id is free again
		{[]*session.Entry{msg("a", "root")}, session.ErrDuplicateID},                      // a passed before
		{[]*session.Entry{msg("root", "")}, session.ErrDuplicateID},                       // in the tree
	}
	for i, s := range steps {
		if err := c.Add(s.batch); !errors.Is(err, s.want) || (err == nil) != (s.want == nil) {
			t.Fatalf("batch %d: %v, want %v", i, err, s.want)
		}
	}
	if tr.Len() != 1 {
		t.Fatalf("the tree holds %d entries after checks, want 1", tr.Len())
	}
}
