package session_test

import (
	"testing"

	"github.com/agentcore/sessionlog/session"
)

// The context's model is the one the last model change or assistant
// message on the path names.
func TestContextModelIsTheLastSet(t *testing.T) {
	change := func(id, provider, model string) *session.Entry {
		return &session.Entry{Type: session.TypeModelChange, ID: id, Body: &session.ModelChange{Provider: provider, ModelID: model}}
	}
	reply := func(id, provider, model string) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, Message: &session.Message{Role: session.RoleAssistant, Body: &session.AssistantFields{Provider: provider, Model: model}}}
	}
	user := &session.Entry{Type: session.TypeMessage, ID: "u", Message: &session.Message{Role: session.RoleUser}}
	tests := []struct {
		name   string
		branch []*session.Entry
		want   string // provider/model, "" for none
	}{
		{"none", []*session.Entry{user}, ""},
		{"a change", []*session.Entry{change("c", "anthropic", "opus"), user}, "anthropic/opus"},
		{"a reply after a change", []*session.Entry{change("c", "anthropic", "opus"), user, reply("r", "openai", "gpt")}, "openai/gpt"},
		{"a change after a reply", []*session.Entry{reply("r", "openai", "gpt"), change("c", "anthropic", "opus")}, "anthropic/opus"},
		{"the last of several replies", []*session.Entry{reply("r1", "a", "1"), reply("r2", "b", "2"), user}, "b/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := session.BuildContext(tt.branch, session.ContextOptions{})
			got := ""
			if c.Model != nil {
				got = c.Model.Provider + "/" + c.Model.ModelID
			}
			if got != tt.want {
				t.Fatalf("model %q, want %q", got, tt.want)
			}
		})
	}
}
