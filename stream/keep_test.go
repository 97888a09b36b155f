package stream_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// An edge's sync rules are the node's: a client given none (the CLI on
// the machine) follows the recorded ones, a session keeps its choice
// when reopened, and content put before an entry names it goes up only
// with an entry of a session that syncs.
func TestSyncRulesAreTheNodes(t *testing.T) {
	ctx := context.Background()
	cfg := stream.DefaultConfig()
	cfg.Edge, cfg.Origin = true, "laptop"
	cfg.Sync = &stream.SyncRules{Except: []string{"cwd=/home/a/private", "agent=codex"}}
	edge := newBackendWith(t, cfg)
	cfg = edge.Config()
	cfg.Sync, cfg.Origin = nil, ""
	cli := newBackendOn(t, cfg)

	create := func(b *stream.Backend, id, cwd string, metadata string) *stream.Store {
		t.Helper()
		h := sessiontest.TestHeader(id)
		h.Cwd = cwd
		if metadata != "" {
			h.Metadata = session.Raw(metadata)
		}
		st, err := b.CreateStore(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(ctx) })
		return st
	}
	create(edge, "diary", "/home/a/private/diary", "")
	create(cli, "notes", "/home/a/private", "")
	create(cli, "codex", "/home/a/work", `{"source":"codex"}`)
	create(edge, "work", "/home/a/work", "")
	create(cli, "privateer", "/home/a/privateer", "")

	// Appends on a store opened again (by the client) go where the
	// session's first message went.
	for _, id := range []string{"diary", "work"} {
		st, err := cli.OpenStore(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := session.New(st, sessiontest.TestConfig())
		if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("more")}); err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
	}
	for id, want := range map[string]string{"diary": ".l", "notes": ".l", "codex": ".l", "work": ".o", "privateer": ".o"} {
		got := sessionSubjects(t, edge.JetStream(), edge.Config().StreamOf(id), edge.SessionSubjects(id))
		if len(got) != 1 || !strings.HasSuffix(got[0], want) {
			t.Errorf("%s is on %v, want only %s", id, got, want)
		}
	}

	// Content put first is kept on the machine; named by a session that
	// syncs, it goes into the store that syncs too.
	put := cli.BlobsForPuts()
	if put == cli.Blobs() {
		t.Fatal("an edge that keeps sessions local puts blobs where they sync")
	}
	ref, err := put.Put(ctx, []byte(`"a screenshot"`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Blobs().ReadPiece(ctx, ref.SHA256, 0, 1<<20); err != nil {
		t.Fatalf("a blob kept on the machine does not read: %v", err)
	}
	before, _ := cli.Blobs().Usage(ctx)
	st, err := cli.OpenStore(ctx, "work")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	leaf, _ := st.Leaf(ctx)
	e := &session.Entry{Type: session.TypeCustom, ID: "shot", ParentID: leaf, Timestamp: "2026-01-01T00:00:09.000Z", Body: &session.Custom{CustomType: "shot", Data: ref.Raw()}}
	if err := st.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if after, _ := cli.Blobs().Usage(ctx); after <= before {
		t.Fatalf("named by a session that syncs, the blob is not in the store that syncs (%d bytes, then %d)", before, after)
	}
	got, err := st.Get(ctx, "shot")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := got.Body.(*session.Custom); !ok || string(c.Data) != `"a screenshot"` {
		t.Fatalf("the entry reads %+v", got.Body)
	}
}

func TestSyncRulesAreChecked(t *testing.T) {
	for _, rules := range []stream.SyncRules{
		{Only: []string{"cwd=relative/path"}},
		{Except: []string{"agent=vim"}},
		{Except: []string{"label=x"}},
		{Only: []string{"cwd=/a,b"}},
		{Except: []string{""}},
	} {
		err := rules.Validate()
		if !errors.Is(err, stream.ErrInvalidConfig) {
			t.Errorf("%+v: %v", rules, err)
		}
	}
	if err := (stream.SyncRules{Only: []string{"cwd=/w", "agent=" + session.AgentLangGraph}}).Validate(); err != nil {
		t.Fatal(err)
	}
	// A deployment that is not an edge sends nothing anywhere to choose.
	cfg := stream.DefaultConfig()
	cfg.Sync = &stream.SyncRules{Except: []string{"cwd=/p"}}
	if _, err := stream.New(context.Background(), nc, cfg); !errors.Is(err, stream.ErrInvalidConfig) {
		t.Fatalf("sync rules on a deployment that is not an edge: %v", err)
	}
}
