package session_test

import (
	"context"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func TestFill(t *testing.T) {
	ctx := context.Background()
	root := "r"
	tests := []struct {
		name         string
		entries      []*session.Entry
		parent       *string
		wantParents  []string
		wantFromLeaf bool
	}{
		{name: "chain onto the leaf", entries: []*session.Entry{{Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}}, {Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}}},
			wantParents: []string{"leaf", "#0"}, wantFromLeaf: true},
		{name: "explicit parent for the first", entries: []*session.Entry{{Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}}, {Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}}},
			parent: &root, wantParents: []string{"r", "#0"}},
		{name: "entry's own parent wins", entries: []*session.Entry{{Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}, ParentID: "r"}, {Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}, ParentID: "r"}},
			wantParents: []string{"r", "r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := sessionkit.NewMemoryStore(sessiontest.TestHeader("fill"))
			for _, e := range []*session.Entry{
				{Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}, ID: "r", Timestamp: "2025-01-01T00:00:00.000Z"},
				{Type: session.TypeCustom, Body: &session.Custom{CustomType: "x"}, ID: "leaf", ParentID: "r", Timestamp: "2025-01-01T00:00:00.000Z"},
			} {
				if err := st.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			// The id source repeats an id in use and then one of the batch.
			cfg := sessiontest.TestConfig()
			ids := []string{"leaf", "n1", "n1", "n2"}
			cfg.IDs = session.IDFunc(func() string { id := ids[0]; ids = ids[1:]; return id })
			sess, err := session.New(st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			fromLeaf, err := sess.Fill(ctx, tt.entries, tt.parent)
			if err != nil {
				t.Fatal(err)
			}
			if fromLeaf != tt.wantFromLeaf {
				t.Fatalf("fromLeaf = %v, want %v", fromLeaf, tt.wantFromLeaf)
			}
			if tt.entries[0].ID != "n1" || tt.entries[1].ID != "n2" {
				t.Fatalf("ids %q %q, want n1 n2", tt.entries[0].ID, tt.entries[1].ID)
			}
			for i, e := range tt.entries {
				want := tt.wantParents[i]
				if want == "#0" {
					want = tt.entries[0].ID
				}
				if e.ParentID != want || e.Timestamp == "" {
					t.Fatalf("entry %d parent %q timestamp %q, want parent %q", i, e.ParentID, e.Timestamp, want)
				}
			}
			if err := st.AppendBatch(ctx, tt.entries); err != nil {
				t.Fatal(err)
			}
		})
	}
}
