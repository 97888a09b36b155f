package session_test

import (
	"testing"

	"github.com/agentcore/sessionlog/session"
)

func TestAgentOf(t *testing.T) {
	for _, c := range []struct{ metadata, want string }{
		{``, session.AgentPi},
		{`{"source":"claude-code","file":"/x.jsonl"}`, session.AgentClaudeCode},
		{`{"source":"codex"}`, session.AgentCodex},
		{`{"source":"vim"}`, session.AgentPi},
		{`{"langgraph_namespace":"","langgraph_thread":"1"}`, session.AgentLangGraph},
		{`{"openai_session":"s"}`, session.AgentOpenAIAgents},
		{`{"source":1}`, session.AgentPi},
		{`[1,2]`, session.AgentPi},
		{`not json`, session.AgentPi},
	} {
		h := session.Header{ID: "s", Metadata: session.Raw(c.metadata)}
		if got := session.AgentOf(h); got != c.want {
			t.Errorf("%s: %q, want %q", c.metadata, got, c.want)
		}
	}
}
