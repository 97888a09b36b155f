package tracker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/tracker"
)

// With redaction on, fake secrets appended — in text, in tool arguments,
// in content large enough to be stored apart — are in no stream, snapshot
// or blob; the stored entries say what was there; stats count them; event
// consumers are told. The same appends without redaction leave them in
// the raw stream (the search sees them).
func TestRedactionOnWrite(t *testing.T) {
	nc := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	aws := strings.Join([]string{"AKIA", "QWERTYUIOP", "ASDFGH"}, "")
	gh := strings.Join([]string{"ghp_", strings.Repeat("Zx9", 12)}, "")
	ant := strings.Join([]string{"sk-ant-", "api03-", strings.Repeat("k", 30)}, "")
	entries := func(id string) []*session.Entry {
		return []*session.Entry{
			{Type: session.TypeMessage, ID: id + "1", Timestamp: "2026-12-03T00:00:00.000Z",
				Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("my key is " + aws), Timestamp: 1}},
			{Type: session.TypeMessage, ID: id + "2", ParentID: id + "1", Timestamp: "2026-12-03T00:00:01.000Z",
				Message: &session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "p", Model: "m", StopReason: "stop"}, Timestamp: 2, Content: session.Content{Blocks: []session.ContentBlock{
					{Type: session.BlockToolCall, Body: &session.ToolCallBlock{ID: "c1", Name: "bash", Arguments: session.Raw(`{"command":"curl -H 'Authorization: token ` + gh + `'"}`)}}}}}},
			{Type: session.TypeMessage, ID: id + "3", ParentID: id + "2", Timestamp: "2026-12-03T00:00:02.000Z",
				Message: &session.Message{Role: session.RoleToolResult, Body: &session.ToolResultFields{ToolCallID: "c1", ToolName: "bash"}, Timestamp: 3,
					Content: session.TextContent(strings.Repeat("env output line\n", 500) + "ANTHROPIC_API_KEY=" + ant + "\n")}},
		}
	}

	plain := streamConfig()
	pb := backend(t, nc, plain)
	pst, err := pb.CreateStore(ctx, session.Header{ID: "plain", Timestamp: "2026-12-03T00:00:00.000Z"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pst.AppendBatch(ctx, entries("p")); err != nil {
		t.Fatal(err)
	}
	pst.Close(ctx)
	if len(clustertest.StreamsHolding(t, nc, aws)) == 0 || len(clustertest.StreamsHolding(t, nc, ant)) == 0 {
		t.Fatal("without redaction the secrets are not found raw: the search proves nothing")
	}
	pb.DeleteSession(ctx, "plain")

	cfg := streamConfig()
	cfg.OffloadThreshold = 4096
	cfg.Redact = &codec.RedactConfig{Defaults: true}
	b := backend(t, nc, cfg)
	var mu sync.Mutex
	told := map[string]int{}
	sub, err := tracker.Subscribe(ctx, b, tracker.DefaultEventConfig("redactions", session.TypeMessage), func(_ context.Context, ev tracker.Event) error {
		mu.Lock()
		told[ev.Entry.ID] = ev.Redactions
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(ctx)
	st, err := b.CreateStore(ctx, session.Header{ID: "red", Timestamp: "2026-12-03T00:00:00.000Z"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if err := st.AppendBatch(ctx, entries("r")); err != nil {
		t.Fatal(err)
	}
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{aws, gh, ant} {
		if got := clustertest.StreamsHolding(t, nc, secret); len(got) > 0 {
			t.Errorf("a secret is stored raw in %v", got)
		}
	}
	stats, err := st.Stats(ctx)
	if err != nil || stats.Redactions != 3 {
		t.Fatalf("stats count %d redactions (%v), want 3", stats.Redactions, err)
	}
	es, err := st.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := es[0].Message.Content.Blocks[0].Text; got != "my key is "+session.RedactionText("aws-access-key") {
		t.Fatalf("stored text %q", got)
	}
	if got := es[2].Message.Content.Blocks[0].Text; !strings.HasSuffix(got, "ANTHROPIC_API_KEY="+session.RedactionText("anthropic-key")+"\n") {
		t.Fatalf("the large result (stored apart) ends %q", got[len(got)-60:])
	}
	if refs := es[2].BlobRefs(); len(refs) != 0 {
		t.Fatalf("entries come back resolved, not as %v", refs)
	}
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if told["r1"] != 1 || told["r2"] != 1 || told["r3"] != 1 {
			return fmt.Errorf("events told %v", told)
		}
		return nil
	})
}
