package session_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func buildTree(t *testing.T) *session.Tree {
	t.Helper()
	s := newSession(t, sessiontest.TestConfig())
	e := must[*session.Entry](t)
	u := e(s.AppendMessage(ctx, user("one")))
	e(s.AppendMessage(ctx, session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "p", Model: "m", StopReason: "stop", Usage: &session.Usage{Input: 5, TotalTokens: 5}}, Content: session.TextContent("A")}))
	e(s.SetLabel(ctx, u.ID, "start"))
	e(s.SetName(ctx, "partial"))
	e(s.MoveTo(ctx, u.ID))
	var tree *session.Tree
	s.Store().(session.TreeHolder).ReadTree(ctx, func(tr *session.Tree) error { tree = tr; return nil })
	return tree
}

func TestPartialTree(t *testing.T) {
	full := buildTree(t)
	p, err := session.NewPartialTree(full.Header(), sessiontest.Must(t, full.Skeleton))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Partial() || p.Missing() != full.Len() {
		t.Fatalf("partial=%v missing=%d", p.Partial(), p.Missing())
	}
	if p.Leaf() != full.Leaf() || p.Name() != full.Name() || p.Len() != full.Len() ||
		fmt.Sprint(p.Labels()) != fmt.Sprint(full.Labels()) || fmt.Sprint(p.Stats()) != fmt.Sprint(full.Stats()) {
		t.Fatal("a partial tree answers leaf, name, labels or stats differently")
	}
	// It takes appends, checked against the skeleton.
	dup := &session.Entry{Type: session.TypeCustom, ID: sessiontest.Entries(t, full)[0].ID, Body: &session.Custom{CustomType: "x"}}
	if err := p.Apply(dup); !errors.Is(err, session.ErrDuplicateID) {
		t.Fatalf("duplicate of a skeleton id: %v", err)
	}
	next := &session.Entry{Type: session.TypeCustom, ID: "next", ParentID: p.Leaf(), Body: &session.Custom{CustomType: "x"}}
	if err := p.Apply(next); err != nil {
		t.Fatal(err)
	}
	if p.Leaf() != "next" || !p.Has("next") || !p.Has(sessiontest.Entries(t, full)[1].ID) {
		t.Fatal("append to a partial tree")
	}
	if _, err := p.Entries(); !errors.Is(err, session.ErrPartial) {
		t.Fatalf("reading entries of a partial tree: %v, want ErrPartial", err)
	}
	if _, err := p.Get(sessiontest.Entries(t, full)[0].ID); !errors.Is(err, session.ErrPartial) {
		t.Fatalf("getting an entry of a partial tree: %v, want ErrPartial", err)
	}
	wrong := slices.Clone(sessiontest.Entries(t, full))
	wrong[0], wrong[1] = wrong[1], wrong[0]
	if err := p.Complete(wrong); err == nil || !p.Partial() {
		t.Fatalf("completing with entries out of order: %v", err)
	}
	if err := p.Complete(sessiontest.Entries(t, full)); err != nil {
		t.Fatal(err)
	}
	got := sessiontest.Entries(t, p)
	if len(got) != full.Len()+1 || got[len(got)-1].ID != "next" || p.Partial() {
		t.Fatalf("completed tree has %d entries", len(got))
	}
	br, _ := p.Branch("")
	if br[len(br)-1].ID != "next" {
		t.Fatalf("branch of the completed tree ends at %s", br[len(br)-1].ID)
	}
}

func TestPartialTreeRefusesBadSkeletons(t *testing.T) {
	good := sessiontest.Must(t, buildTree(t).Skeleton)
	tests := []struct {
		name   string
		mutate func(*session.Skeleton)
	}{
		{"short parents", func(s *session.Skeleton) { s.Parents = s.Parents[1:] }},
		{"parent after child", func(s *session.Skeleton) { s.Parents[0] = 2 }},
		{"duplicate id", func(s *session.Skeleton) {
			ids := make([]string, s.IDs.Len())
			for i := range ids {
				ids[i] = s.IDs.At(i)
			}
			ids[1] = ids[0]
			s.IDs = session.IDListOf(ids)
		}},
		{"leaf out of range", func(s *session.Skeleton) { s.Leaf = int32(s.IDs.Len()) }},
		{"sort order repeats a position", func(s *session.Skeleton) { s.Sorted[1] = s.Sorted[0] }},
		{"sort order out of order", func(s *session.Skeleton) { s.Sorted[0], s.Sorted[1] = s.Sorted[1], s.Sorted[0] }},
		{"sort order missing", func(s *session.Skeleton) { s.Sorted = nil }},
		{"type outside the dictionary", func(s *session.Skeleton) { s.Types[0] = uint8(len(s.TypeDict)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			s.Parents, s.Types, s.Sorted = slices.Clone(good.Parents), slices.Clone(good.Types), slices.Clone(good.Sorted) // IDs are never changed in place
			s.TypeDict = slices.Clone(good.TypeDict)
			tt.mutate(&s)
			if _, err := session.NewPartialTree(sessiontest.TestHeader("x"), s); err == nil {
				t.Fatal("bad skeleton accepted")
			}
		})
	}
}
