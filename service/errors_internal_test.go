package service

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		want       api.Code
		wantUnwrap error // nil: unwraps to nothing
	}{
		{name: "conflict", err: &session.ConflictError{Leaf: "x", Sequence: 3}, want: api.CodeConflict, wantUnwrap: session.ErrConflict},
		{name: "session id", err: fmt.Errorf("w: %w", session.ErrInvalidSessionID), want: api.CodeInvalidSessionID, wantUnwrap: session.ErrInvalidSessionID},
		{name: "session not found", err: fmt.Errorf("w: %w", session.ErrSessionNotFound), want: api.CodeNotFound, wantUnwrap: session.ErrSessionNotFound},
		{name: "exists", err: session.ErrSessionExists, want: api.CodeExists, wantUnwrap: session.ErrSessionExists},
		{name: "duplicate", err: session.ErrDuplicateID, want: api.CodeDuplicateID, wantUnwrap: session.ErrDuplicateID},
		{name: "parent", err: session.ErrParentNotFound, want: api.CodeParentNotFound, wantUnwrap: session.ErrParentNotFound},
		{name: "target", err: &session.TargetError{}, want: api.CodeInvalidTarget, wantUnwrap: session.ErrInvalidTarget},
		{name: "cycle", err: session.ErrCycle, want: api.CodeInvalidTarget, wantUnwrap: session.ErrInvalidTarget},
		{name: "entry not found", err: session.ErrEntryNotFound, want: api.CodeEntryNotFound, wantUnwrap: session.ErrEntryNotFound},
		{name: "invalid entry", err: session.ErrInvalidEntry, want: api.CodeInvalidEntry, wantUnwrap: session.ErrInvalidEntry},
		{name: "member", err: &codec.MemberError{Pointer: "/x"}, want: api.CodeInvalidEntry, wantUnwrap: session.ErrInvalidEntry},
		{name: "too large", err: stream.ErrEntryTooLarge, want: api.CodeTooLarge},
		{name: "deadline", err: context.DeadlineExceeded, want: api.CodeTimeout},
		{name: "closed", err: session.ErrClosed, want: api.CodeUnavailable},
		{name: "service closed", err: fmt.Errorf("w: %w", ErrClosed), want: api.CodeUnavailable},
		{name: "re-created while read", err: fmt.Errorf("w: %w", stream.ErrRecreated), want: api.CodeUnavailable},
		{name: "corrupt", err: fmt.Errorf("w: %w", stream.ErrCorrupt), want: api.CodeInternal},
		{name: "anything else", err: errors.New("boom"), want: api.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errorOf(tt.err)
			if e.Code != tt.want {
				t.Fatalf("code %s, want %s", e.Code, tt.want)
			}
			if got := e.Unwrap(); got != tt.wantUnwrap {
				t.Fatalf("unwraps to %v, want %v", got, tt.wantUnwrap)
			}
		})
	}
	if !errors.Is(badRequest("/x", "no"), session.ErrInvalidEntry) {
		t.Fatal("a bad request is not an invalid entry")
	}
}
