package stream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// The serving node's rules are recorded in the deployment's streams and
// every other backend applies them, joined to its own; the node given
// none removes the record (redaction turned off), and backends opened
// after that store entries as written.
func TestRecordedRedactionBindsEveryWriter(t *testing.T) {
	ctx := context.Background()
	const key = "AKIAIOSFODNN7EXAMPLE"
	const own = "itk_abcdef123456"
	cfg := stream.DefaultConfig()
	cfg.Redact, cfg.RecordRedaction = &codec.RedactConfig{Defaults: true}, true
	served := newBackendWith(t, cfg)
	other := served.Config()
	other.Redact, other.RecordRedaction = &codec.RedactConfig{Rules: []codec.RedactRule{{Name: "internal-token", Pattern: `itk_[a-z0-9]{12}`}}}, false
	writer := newBackendOn(t, other)
	plain := served.Config()
	plain.Redact, plain.RecordRedaction = nil, false
	library := newBackendOn(t, plain)

	write := func(b *stream.Backend, id string) string {
		t.Helper()
		st, err := b.Create(ctx, session.Header{ID: id, Version: 3, Timestamp: "2026-12-07T00:00:00.000Z", Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		e := &session.Entry{Type: session.TypeMessage, ID: "m1", Timestamp: "2026-12-07T00:00:01.000Z",
			Message: &session.Message{Role: session.RoleUser, Timestamp: 1, Content: session.TextContent("keys " + key + " " + own)}}
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		es, err := st.Entries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := codec.EncodeEntry(es[len(es)-1])
		return string(b2)
	}
	if got := write(library, "lib"); strings.Contains(got, key) {
		t.Fatalf("a backend given no rules stored the key the node redacts: %s", got)
	}
	got := write(writer, "own")
	if strings.Contains(got, key) || strings.Contains(got, own) {
		t.Fatalf("the node's rules and the writer's own, joined, missed one: %s", got)
	}
	// The node restarted without redaction: the record goes, and what is
	// written from then is stored as written.
	off := served.Config()
	off.Redact = nil
	newBackendOn(t, off)
	if got := write(newBackendOn(t, plain), "after"); !strings.Contains(got, key) {
		t.Fatalf("redaction turned off at the node still applies: %s", got)
	}
}
