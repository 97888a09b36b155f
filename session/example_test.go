package session_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/system"
)

// Each entry holds its own type's members: a message entry its Message
// (and an assistant's model and usage in the message's Body), every other
// type a Body of that type, read with a type switch or with the typed
// views (Entry.Compaction, Message.Assistant, …), which are nil for any
// other type.
func ExampleEntry_Body() {
	ctx := context.Background()
	s, err := session.New(sessionkit.NewMemoryStore(session.Header{Version: session.CurrentVersion, ID: "example"}), system.Config())
	if err != nil {
		log.Fatal(err)
	}
	first, _ := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("Rename the flag.")})
	s.AppendMessage(ctx, session.Message{Role: session.RoleAssistant, Content: session.TextContent("Done."),
		Body: &session.AssistantFields{Provider: "anthropic", Model: "claude-sonnet-4", StopReason: "stop",
			Usage: &session.Usage{Input: 1200, Output: 40, TotalTokens: 1240}}})
	s.SetLabel(ctx, first.ID, "start")
	s.AppendCompaction(ctx, session.Compaction{Summary: "The flag was renamed.", FirstKeptEntryID: first.ID, TokensBefore: 1240})

	branch, err := s.Branch(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range branch {
		switch b := e.Body.(type) {
		case nil:
			if a := e.Message.Assistant(); a != nil {
				fmt.Printf("%s: %s/%s, %d tokens\n", e.Message.Role, a.Provider, a.Model, a.Usage.TotalTokens)
			} else {
				fmt.Printf("%s: %s\n", e.Message.Role, e.Message.Text())
			}
		case *session.Label:
			fmt.Printf("label %q\n", b.Label)
		case *session.Compaction:
			fmt.Printf("compaction: %s (%d tokens before)\n", b.Summary, b.TokensBefore)
		}
	}
	// Output:
	// user: Rename the flag.
	// assistant: anthropic/claude-sonnet-4, 1240 tokens
	// label "start"
	// compaction: The flag was renamed. (1240 tokens before)
}
