package sessionkit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/system"
)

// A backend in a few lines: a TreeStore whose WriteAhead makes each batch
// durable (here, a slice standing in for a file or a stream) before the
// store applies it. A batch the WriteAhead refuses leaves the tree as it
// was.
func ExampleNewTreeStore() {
	ctx := context.Background()
	var durable []string // what the backend made durable
	full := false
	wal := func(ctx context.Context, entries []*session.Entry) error {
		if full {
			return fmt.Errorf("disk full")
		}
		for _, e := range entries {
			durable = append(durable, string(e.Type)+" "+e.ID)
		}
		return nil
	}
	h := session.Header{Version: session.CurrentVersion, ID: "kit"}
	st := sessionkit.NewTreeStore(session.NewTree(h), wal, nil)
	defer st.Close(ctx)
	s, err := session.New(st, system.Config())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("hi")}); err != nil {
		log.Fatal(err)
	}
	full = true
	_, err = s.SetName(ctx, "greeting")
	stats, _ := st.Stats(ctx)
	fmt.Println(len(durable), "durable;", stats.Entries, "applied; refused:", err)
	// Output: 1 durable; 1 applied; refused: disk full
}
