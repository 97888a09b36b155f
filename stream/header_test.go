package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
)

// Header reads a session's header alone, on whichever partition holds
// it, however long the session; a session that is not there is
// ErrSessionNotFound.
func TestHeaderReadsTheFirstMessageAlone(t *testing.T) {
	ctx := context.Background()
	cfg := newBackend(t).Config()
	cfg.Partitions = 3
	b := newBackendWith(t, cfg)
	h, entries := sessiongen.Generate(3000)
	h.Cwd = "/work/long"
	st, err := b.CreateStore(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if err := st.AppendBatch(ctx, entries[:1000]); err != nil {
		t.Fatal(err)
	}
	got, err := b.Header(ctx, h.ID)
	if err != nil || got.ID != h.ID || got.Cwd != "/work/long" {
		t.Fatalf("Header: %+v, %v", got, err)
	}
	if _, err := b.Header(ctx, "nosuch"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("Header of a session not there: %v", err)
	}
	if _, err := b.Header(ctx, "bad id"); err == nil {
		t.Fatal("Header of an invalid id")
	}
}
