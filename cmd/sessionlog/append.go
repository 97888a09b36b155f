package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// maxStdinMessage bounds a message read from stdin.
const maxStdinMessage = 64 << 20

func runAppend(ctx context.Context, e env) error {
	fs := newFlags("append", e)
	rf := addRepoFlags(fs)
	role := fs.String("role", session.RoleUser, "user, assistant or toolResult")
	text := fs.String("text", "", "the message text")
	fromStdin := fs.Bool("json", false, "read the message as pi JSON from stdin instead of the flags")
	provider := fs.String("provider", "", "assistant: provider")
	model := fs.String("model", "", "assistant: model id")
	toolCallID := fs.String("tool-call-id", "", "toolResult: id of the tool call answered")
	toolName := fs.String("tool-name", "", "toolResult: name of the tool")
	isError := fs.Bool("error", false, "toolResult: the tool failed")
	withSeq := fs.Bool("seq", false, "also print the stream sequence (for `sessionlog wait`)")
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	var m session.Message
	if *fromStdin {
		data, err := io.ReadAll(io.LimitReader(e.stdin, maxStdinMessage+1))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(data) > maxStdinMessage {
			return fmt.Errorf("message on stdin is larger than %d bytes", maxStdinMessage)
		}
		dm, err := codec.DecodeMessage(data)
		if err != nil {
			return fmt.Errorf("message on stdin: %w", err)
		}
		m = *dm
	} else {
		m = session.Message{Role: *role, Content: session.TextContent(*text)}
		switch *role {
		case session.RoleUser:
		case session.RoleAssistant:
			m.Content = session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: *text})
			m.Provider, m.Model, m.StopReason = *provider, *model, "stop"
		case session.RoleToolResult:
			if *toolCallID == "" || *toolName == "" {
				return usageError("a toolResult needs -tool-call-id and -tool-name")
			}
			m.Content = session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: *text})
			m.ToolCallID, m.ToolName, m.IsError = *toolCallID, *toolName, *isError
		default:
			return usageError("unknown role %q (user, assistant, toolResult; other roles via -json)", *role)
		}
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		entry, err := s.AppendMessage(ctx, m)
		if err != nil {
			return err
		}
		if sq, ok := s.Store().(interface {
			Sequence(context.Context) (uint64, error)
		}); ok && *withSeq {
			seq, err := sq.Sequence(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s %d\n", entry.ID, seq)
			return nil
		}
		fmt.Fprintln(e.stdout, entry.ID)
		return nil
	})
}
