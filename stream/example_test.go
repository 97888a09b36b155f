package stream_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// A session on the embedded node: messages, a label, a branch with its
// summary, a compaction, the context the model sees, and a fork. (The
// README's library example, compiled and run.)
func Example() {
	ctx := context.Background()
	dataDir, err := os.MkdirTemp("", "sessionlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dataDir)

	node, err := cluster.Start(ctx, cluster.DefaultConfig(dataDir)) // or cluster.Dial(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close(ctx)
	nc, err := node.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	repo, err := stream.New(ctx, nc, stream.DefaultConfig()) // or filestore.NewRepo(dir, filestore.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer repo.Close(ctx)

	h := session.Header{Version: session.CurrentVersion, ID: system.SessionID(),
		Timestamp: session.FormatTime(system.Clock{}.Now()), Cwd: "/repo"}
	store, err := repo.Create(ctx, h)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close(ctx)
	s, err := session.New(store, system.Config()) // wall clock, random ids
	if err != nil {
		log.Fatal(err)
	}

	must := func(_ *session.Entry, err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	u, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("add retries")})
	if err != nil {
		log.Fatal(err)
	}
	// An assistant message says who answered: a zero one is refused.
	must(s.AppendMessage(ctx, session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: "anthropic", Model: "claude-x", StopReason: "stop"},
		Content: session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: "Done: 3 retries with backoff."})}))
	must(s.SetLabel(ctx, u.ID, "start"))
	must(s.MoveTo(ctx, u.ID, session.WithBranchSummary("tried backoff; the user wants a circuit breaker", nil, false)))
	kept, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("use a circuit breaker")})
	if err != nil {
		log.Fatal(err)
	}
	must(s.AppendCompaction(ctx, session.Compaction{Summary: "retries were asked for; a breaker is wanted", FirstKeptEntryID: kept.ID, TokensBefore: 12000}))

	c, err := s.BuildContext(ctx) // c.Messages are shared with the entries: read-only
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range c.Messages {
		if s := m.Summary(); s != nil {
			fmt.Printf("%s: %s\n", m.Role, s.Summary)
			continue
		}
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}

	// A fork copies a branch into a new session: SelectFork only says
	// which entries; Repo.Fork copies them.
	fh := session.Header{Version: session.CurrentVersion, ID: system.SessionID(), Timestamp: session.FormatTime(system.Clock{}.Now()), Cwd: "/repo"}
	forked, sel, err := repo.Fork(ctx, h.ID, session.Before(kept.ID), fh)
	if err != nil {
		log.Fatal(err)
	}
	defer forked.Close(ctx)
	fmt.Printf("forked %d entries before %q\n", len(sel.Entries), sel.Before.Message.Text())
	// Output:
	// compactionSummary: retries were asked for; a breaker is wanted
	// user: use a circuit breaker
	// forked 2 entries before "use a circuit breaker"
}

// A writer streaming a tool's output: each chunk is appended to a
// pipeline at once, and chunks appended while a batch is in flight go
// together as the next, so the burst costs a round trip or two.
func ExampleStore_Pipeline() {
	ctx := context.Background()
	repo, done := embeddedRepo(ctx)
	defer done()
	h := session.Header{Version: session.CurrentVersion, ID: "streamed", Timestamp: "2026-01-01T00:00:00.000Z", Cwd: "/repo"}
	store, err := repo.CreateStore(ctx, h)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close(ctx)

	p, err := store.Pipeline(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 100 {
		// No parent: each chunk goes after the one before.
		err := p.Append(&session.Entry{Type: session.TypeCustomMessage, ID: fmt.Sprintf("out%03d", i), Timestamp: "2026-01-01T00:00:01.000Z", Body: &session.CustomMessage{CustomType: "tool-output", Content: session.TextContent(fmt.Sprintf("line %d\n", i)), Display: true}})
		if err != nil {
			log.Fatal(err) // the chain stopped (a *stream.PipelineError), or an entry was refused
		}
	}
	stored, err := p.Close(ctx) // waits for everything appended
	if err != nil {
		log.Fatal(err)
	}
	leaf, _ := store.Leaf(ctx)
	fmt.Println(stored, "stored; leaf", leaf)
	// Output: 100 stored; leaf out099
}

// embeddedRepo is a repository on an embedded node of its own, in a
// temporary directory that done removes.
func embeddedRepo(ctx context.Context) (repo *stream.Backend, done func()) {
	dataDir, err := os.MkdirTemp("", "sessionlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	node, err := cluster.Start(ctx, cluster.DefaultConfig(dataDir))
	if err != nil {
		log.Fatal(err)
	}
	nc, err := node.Connect()
	if err != nil {
		log.Fatal(err)
	}
	if repo, err = stream.New(ctx, nc, stream.DefaultConfig()); err != nil {
		log.Fatal(err)
	}
	return repo, func() {
		repo.Close(ctx)
		nc.Close()
		node.Close(ctx)
		os.RemoveAll(dataDir)
	}
}
