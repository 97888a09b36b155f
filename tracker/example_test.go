package tracker_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

// A durable consumer of compactions across every session: what an
// event-driven service (an indexer, a notifier) runs. Its position
// survives restarts; processes subscribing under the same name share the
// work; a handler's error has the entry delivered again.
func ExampleSubscribe() {
	ctx := context.Background()
	dataDir, err := os.MkdirTemp("", "sessionlog-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dataDir)
	node, err := cluster.Start(ctx, cluster.DefaultConfig(dataDir))
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close(ctx)
	nc, err := node.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	b, err := stream.New(ctx, nc, stream.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close(ctx)

	got := make(chan string, 1)
	sub, err := tracker.Subscribe(ctx, b, tracker.DefaultEventConfig("compactions", session.TypeCompaction),
		func(ctx context.Context, ev tracker.Event) error {
			got <- fmt.Sprintf("%s compacted: %s", ev.Session, ev.Entry.Summary())
			return nil // acknowledged
		})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close(ctx)

	st, err := b.Create(ctx, session.Header{Version: session.CurrentVersion, ID: "s1", Timestamp: session.FormatTime(system.Clock{}.Now())})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close(ctx)
	s, err := session.New(st, system.Config())
	if err != nil {
		log.Fatal(err)
	}
	u, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("hello")})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.AppendCompaction(ctx, session.Compaction{Summary: "a greeting", FirstKeptEntryID: u.ID, TokensBefore: 10}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got)
	// Output: s1 compacted: a greeting
}
