package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
)

// AppendInput is append_message's arguments.
type AppendInput struct {
	Session    string `json:"session" jsonschema:"the session's id"`
	Text       string `json:"text" jsonschema:"the message, as a user message"`
	IfSequence uint64 `json:"if_sequence,omitempty" jsonschema:"append only if the session is still at this sequence"`
}

// WriteOutput says where a write left the session.
type WriteOutput struct {
	Entry    string `json:"entry"`
	Leaf     string `json:"leaf"`
	Sequence uint64 `json:"sequence"`
}

func (t *tools) appendMessage(ctx context.Context, _ *mcp.CallToolRequest, in AppendInput) (*mcp.CallToolResult, WriteOutput, error) {
	if err := checkSession(in.Session); err != nil {
		return nil, WriteOutput{}, err
	}
	if strings.TrimSpace(in.Text) == "" {
		return nil, WriteOutput{}, errors.New("text is empty: a log keeps what is appended for good")
	}
	msg, _ := json.Marshal(map[string]any{"type": "message", "message": map[string]any{"role": "user", "content": in.Text}})
	var reply api.AppendReply
	if err := t.svc.Call(ctx, api.OpAppend, api.AppendRequest{Session: in.Session, Entries: []jsontext.Value{msg}, IfSequence: in.IfSequence}, &reply); err != nil {
		return nil, WriteOutput{}, err
	}
	out := WriteOutput{Leaf: reply.Leaf, Sequence: reply.Sequence}
	if len(reply.Entries) > 0 {
		out.Entry = reply.Entries[0].ID
	}
	return text(fmt.Sprintf("appended entry %s; the session is at sequence %d", out.Entry, out.Sequence)), out, nil
}

// LabelInput is label_entry's arguments.
type LabelInput struct {
	Session    string `json:"session" jsonschema:"the session's id"`
	Entry      string `json:"entry" jsonschema:"the entry to label"`
	Label      string `json:"label" jsonschema:"the label; empty clears it"`
	IfSequence uint64 `json:"if_sequence,omitempty" jsonschema:"label only if the session is still at this sequence"`
}

func (t *tools) labelEntry(ctx context.Context, _ *mcp.CallToolRequest, in LabelInput) (*mcp.CallToolResult, WriteOutput, error) {
	if err := checkSession(in.Session); err != nil {
		return nil, WriteOutput{}, err
	}
	if err := checkEntry(in.Entry); err != nil {
		return nil, WriteOutput{}, err
	}
	var reply api.AppendReply
	if err := t.svc.Call(ctx, api.OpLabel, api.LabelRequest{Session: in.Session, Target: in.Entry, Label: in.Label, IfSequence: in.IfSequence}, &reply); err != nil {
		return nil, WriteOutput{}, err
	}
	out := WriteOutput{Leaf: reply.Leaf, Sequence: reply.Sequence}
	if len(reply.Entries) > 0 {
		out.Entry = reply.Entries[0].ID
	}
	return text(fmt.Sprintf("labelled %s %q; the session is at sequence %d", in.Entry, in.Label, out.Sequence)), out, nil
}
