package filestore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentcore/sessionlog/session"
)

// A write that fails leaves nothing applied, and the store refuses further
// writes rather than guess what reached the disk.
func TestFailedWritePoisons(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "p.jsonl")
	s, err := Create(ctx, p, session.Header{ID: "p", Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/"}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	s.f.Close() // the disk "fails": writes and truncates now error
	e := &session.Entry{Type: session.TypeCustom, ID: "c1", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "x"}}
	if err := s.Append(ctx, e); err == nil {
		t.Fatal("append on a failed file succeeded")
	}
	if _, err := s.Get(ctx, "c1"); !errors.Is(err, session.ErrEntryNotFound) {
		t.Fatalf("failed entry was applied: %v", err)
	}
	e2 := &session.Entry{Type: session.TypeCustom, ID: "c2", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "x"}}
	if err := s.Append(ctx, e2); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("second append: %v, want ErrPoisoned", err)
	}
}
