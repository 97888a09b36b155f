package main

import (
	"bytes"
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
	entryStdin := fs.Bool("entry", false, "read pi entries of any type from stdin (one JSON object, or one per line, appended in order); id, parentId and timestamp may be left out")
	provider := fs.String("provider", "", "assistant: provider")
	model := fs.String("model", "", "assistant: model id")
	toolCallID := fs.String("tool-call-id", "", "toolResult: id of the tool call answered")
	toolName := fs.String("tool-name", "", "toolResult: name of the tool")
	isError := fs.Bool("error", false, "toolResult: the tool failed")
	withSeq := fs.Bool("seq", false, "also print the stream sequence (for the wait verb)")
	args, err := parseArgs(fs, e.args, 1, "one session id")
	if err != nil {
		return err
	}
	if *fromStdin && *entryStdin {
		return usageError("-json (a message) and -entry (entries) both read stdin: give one")
	}
	if *entryStdin {
		data, err := readStdin(e.stdin, "entries")
		if err != nil {
			return err
		}
		entries, err := decodeEntries(data)
		if err != nil {
			return err
		}
		return withSession(ctx, rf, args[0], func(s *session.Session) error { return appendEntries(ctx, e, s, entries, *withSeq) })
	}
	var m session.Message
	if *fromStdin {
		data, err := readStdin(e.stdin, "message")
		if err != nil {
			return err
		}
		dm, err := codec.DecodeMessage(data)
		if err != nil {
			return fmt.Errorf("message on stdin: %w", err)
		}
		m = *dm
	} else {
		switch *role {
		case session.RoleUser, session.RoleAssistant, session.RoleToolResult:
		default:
			return usageError("unknown role %q (user, assistant, toolResult; other roles via -json)", *role)
		}
		// A log refuses deletes: an empty message would stay for good.
		if *text == "" && *role != session.RoleToolResult {
			return usageError("nothing to append: give -text, -json (a pi message on stdin) or -entry (pi entries on stdin)")
		}
		m = session.Message{Role: *role, Content: session.TextContent(*text)}
		switch *role {
		case session.RoleUser:
		case session.RoleAssistant:
			if *provider == "" || *model == "" {
				return usageError("an assistant message says who answered: give -provider and -model")
			}
			m.Content = session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: *text})
			m.Body = &session.AssistantFields{Provider: *provider, Model: *model, StopReason: "stop"}
		case session.RoleToolResult:
			if *toolCallID == "" || *toolName == "" {
				return usageError("a toolResult needs -tool-call-id and -tool-name")
			}
			m.Content = session.BlocksContent(session.ContentBlock{Type: session.BlockText, Text: *text})
			m.Body = &session.ToolResultFields{ToolCallID: *toolCallID, ToolName: *toolName, IsError: *isError}
		default:
			return usageError("unknown role %q (user, assistant, toolResult; other roles via -json)", *role)
		}
	}
	return withSession(ctx, rf, args[0], func(s *session.Session) error {
		entry, err := s.AppendMessage(ctx, m)
		if err != nil {
			return err
		}
		return printAppended(ctx, e, s, []*session.Entry{entry}, *withSeq)
	})
}

// readStdin reads what a verb takes on stdin, bounded.
func readStdin(r io.Reader, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxStdinMessage+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxStdinMessage {
		return nil, fmt.Errorf("%s on stdin: larger than %d bytes", what, maxStdinMessage)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, usageError("no %s on stdin", what)
	}
	return data, nil
}

// printAppended prints the ids of what was appended, one a line, with the
// stream sequence after the last when asked (for `sessionlog wait`).
func printAppended(ctx context.Context, e env, s *session.Session, entries []*session.Entry, withSeq bool) error {
	for i, entry := range entries {
		if i < len(entries)-1 || !withSeq {
			fmt.Fprintln(e.stdout, entry.ID)
			continue
		}
		sq, ok := s.Store().(interface {
			Sequence(context.Context) (uint64, error)
		})
		if !ok {
			return usageError("-seq needs the JetStream store (a file has no sequence)")
		}
		seq, err := sq.Sequence(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s %d\n", entry.ID, seq)
	}
	return nil
}
