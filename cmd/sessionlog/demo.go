package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
)

// runDemo plays a short agent conversation — tool use, a label, a branch
// with a summary, a compaction — into a session on the embedded JetStream
// node, reopens it from the stream as another process would, prints its
// tree, context and stats, and exports it as a pi file.
func runDemo(ctx context.Context, e env) error {
	fs := newFlags("demo", e)
	rf := addRepoFlags(fs)
	rf.create = true
	if err := parseFlags(fs, e.args); err != nil {
		return err
	}
	if !flagSet(fs, "data") && rf.url == "" && rf.files == "" {
		d, err := os.MkdirTemp("", "sessionlog-demo-")
		if err != nil {
			return err
		}
		rf.data = d
	}
	w := e.stdout
	return withRepo(ctx, rf, func(repo session.Repo) error {
		h := session.Header{Version: session.CurrentVersion, ID: system.SessionID(),
			Timestamp: session.FormatTime(system.Clock{}.Now()), Cwd: "/work/http-client"}
		st, err := repo.Create(ctx, h)
		if err != nil {
			return err
		}
		if err := playDemo(ctx, st); err != nil {
			st.Close(ctx)
			return err
		}
		if err := st.Close(ctx); err != nil {
			return err
		}
		where := "embedded JetStream node, data " + rf.data
		if rf.files != "" {
			where = "JSONL files in " + rf.files
		} else if rf.url != "" {
			where = rf.url
		}
		fmt.Fprintf(w, "session %s written to %s\n\n", h.ID, where)

		st, err = repo.Open(ctx, h.ID) // read back from storage
		if err != nil {
			return err
		}
		defer st.Close(ctx)
		sess, err := session.New(st, sysConfig())
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "── sessionlog tree %s\n", h.ID)
		if err := printSession(ctx, e.stdout, sess, treeOptions{width: 72}); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n── sessionlog context %s\n", h.ID)
		if err := printContext(ctx, e, sess, ""); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n── sessionlog stats %s\n", h.ID)
		stats, u, err := sessionStats(ctx, sess, rf.data)
		if err != nil {
			return err
		}
		printStats(e, stats, u)
		entries, err := st.Entries(ctx)
		if err != nil {
			return err
		}
		data, err := codec.EncodeFile(&h, entries)
		if err != nil {
			return err
		}
		dir := rf.data
		if rf.files != "" {
			dir = rf.files
		}
		path := filepath.Join(dir, h.ID+".export.jsonl")
		if err := filestore.WriteAtomic(path, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n── sessionlog export %s -o %s\n", h.ID, path)
		if err := runCheck(ctx, env{args: []string{path}, stdout: w, stderr: e.stderr}); err != nil {
			return err
		}
		if rf.files == "" && rf.url == "" {
			// The data stays: say how to look at it again.
			fmt.Fprintf(w, "\nThe data stays in %s. Explore it:\n", rf.data)
			fmt.Fprintf(w, "  go run ./cmd/sessionlog ls -data %s\n", rf.data)
			fmt.Fprintf(w, "  go run ./cmd/sessionlog tree %s -data %s\n", h.ID, rf.data)
			fmt.Fprintf(w, "  go run ./cmd/sessionlog serve -data %s      # then open http://127.0.0.1:8080/\n", rf.data)
			fmt.Fprintf(w, "  rm -r %s                                   # when done\n", rf.data)
		}
		return nil
	})
}

func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

func playDemo(ctx context.Context, store session.Store) error {
	s, err := session.New(store, system.Config())
	if err != nil {
		return err
	}
	var firstAnswer, task *session.Entry
	usage := func(in, out int64) *session.Usage {
		cost := float64(in)*3e-6 + float64(out)*15e-6
		return &session.Usage{Input: in, Output: out, TotalTokens: in + out,
			Cost: session.Cost{Input: float64(in) * 3e-6, Output: float64(out) * 15e-6, Total: cost}}
	}
	assistant := func(text string, in, out int64, calls ...session.ContentBlock) session.Message {
		blocks := append([]session.ContentBlock{{Type: session.BlockText, Text: text}}, calls...)
		stop := "stop"
		if len(calls) > 0 {
			stop = "toolUse"
		}
		return session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{API: "anthropic-messages", Provider: "anthropic", Model: "claude-sonnet-4", Usage: usage(in, out), StopReason: stop}, Content: session.BlocksContent(blocks...)}
	}
	user := func(text string) session.Message {
		return session.Message{Role: session.RoleUser, Content: session.TextContent(text)}
	}
	steps := []func() error{
		func() (err error) { _, err = s.AppendModelChange(ctx, "anthropic", "claude-sonnet-4"); return },
		func() (err error) { _, err = s.AppendThinkingLevelChange(ctx, "medium"); return },
		func() (err error) { _, err = s.AppendActiveToolsChange(ctx, []string{"read", "edit", "bash"}); return },
		func() (err error) {
			task, err = s.AppendMessage(ctx, user("Add retries to the HTTP client in client.go"))
			return
		},
		func() (err error) {
			_, err = s.AppendMessage(ctx, assistant("Let me read it first.", 1200, 40, session.ContentBlock{
				Type: session.BlockToolCall, Body: &session.ToolCallBlock{ID: "call_1", Name: "read", Arguments: session.Raw(`{"path":"client.go"}`)}}))
			return
		},
		func() (err error) {
			_, err = s.AppendMessage(ctx, session.Message{Role: session.RoleToolResult, Body: &session.ToolResultFields{ToolCallID: "call_1", ToolName: "read"},
				Content: session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: "func Get(url string) (*Response, error) { … }"})})
			return
		},
		func() (err error) {
			firstAnswer, err = s.AppendMessage(ctx, assistant("Get now retries 3 times on 5xx responses.", 1500, 200))
			return
		},
		func() (err error) { _, err = s.SetLabel(ctx, task.ID, "task"); return },
		func() (err error) {
			_, err = s.AppendMessage(ctx, user("Make the backoff exponential with jitter."))
			return
		},
		func() (err error) {
			_, err = s.AppendMessage(ctx, assistant("Done: 100ms·2^n with full jitter.", 1800, 150))
			return
		},
		func() (err error) {
			_, err = s.MoveTo(ctx, firstAnswer.ID, session.WithBranchSummary("Tried exponential backoff with jitter; the user preferred a circuit breaker.", nil, false))
			return
		},
		func() (err error) { _, err = s.AppendMessage(ctx, user("Use a circuit breaker instead.")); return },
		func() (err error) {
			_, err = s.AppendMessage(ctx, assistant("Added a breaker that opens after 5 failures.", 2100, 220))
			return
		},
		func() (err error) {
			leaf, err := s.Leaf(ctx)
			if err != nil {
				return err
			}
			_, err = s.AppendCompaction(ctx, session.Compaction{
				Summary:          "The user asked for retries in client.go; Get retries 3 times on 5xx and a circuit breaker guards it.",
				FirstKeptEntryID: leaf, TokensBefore: 2320, Usage: usage(2400, 90),
			})
			return err
		},
		func() (err error) { _, err = s.SetName(ctx, "HTTP client retries"); return },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("demo step %d: %w", i+1, err)
		}
	}
	return nil
}
