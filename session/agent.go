package session

import "encoding/json"

// The agents a session can be made by, as AgentOf names them.
const (
	AgentClaudeCode   = "claude-code"   // imported or followed from Claude Code's transcripts
	AgentCodex        = "codex"         // from Codex's
	AgentLangGraph    = "langgraph"     // a LangGraph thread (the TypeScript and Python checkpointers)
	AgentOpenAIAgents = "openai-agents" // an OpenAI Agents SDK session
	AgentPi           = "pi"            // pi's own, and any other in pi's format
)

// Agents lists every name AgentOf gives.
var Agents = []string{AgentClaudeCode, AgentCodex, AgentLangGraph, AgentOpenAIAgents, AgentPi}

// AgentOf names the agent that made a session, as its header tells: the
// "source" an import records (Claude Code, Codex), the members the
// LangGraph and Agents SDK adapters record, and otherwise pi.
func AgentOf(h Header) string {
	var md struct {
		Source    string `json:"source"`
		LangGraph any    `json:"langgraph_thread"`
		OpenAI    any    `json:"openai_session"`
	}
	if len(h.Metadata) == 0 || json.Unmarshal(h.Metadata, &md) != nil {
		return AgentPi
	}
	switch {
	case md.Source == AgentClaudeCode || md.Source == AgentCodex:
		return md.Source
	case md.LangGraph != nil:
		return AgentLangGraph
	case md.OpenAI != nil:
		return AgentOpenAIAgents
	}
	return AgentPi
}
