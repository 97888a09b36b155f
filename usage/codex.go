package usage

import (
	"bytes"
	"strings"
	"time"

	json "github.com/go-json-experiment/json/v1"
)

// codexTokens are the amounts of a Codex token count.
type codexTokens struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_output_tokens"`
	Total     int64 `json:"total_tokens"`
}

type codexModelOf struct {
	Model     string `json:"model"`
	ModelName string `json:"model_name"`
	Metadata  *struct {
		Model string `json:"model"`
	} `json:"metadata"`
}

func (m *codexModelOf) name() string {
	switch {
	case m == nil:
		return ""
	case strings.TrimSpace(m.Model) != "":
		return strings.TrimSpace(m.Model)
	case strings.TrimSpace(m.ModelName) != "":
		return strings.TrimSpace(m.ModelName)
	case m.Metadata != nil:
		return strings.TrimSpace(m.Metadata.Model)
	}
	return ""
}

type codexLine struct {
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Payload   *struct {
		Type string `json:"type"`
		codexModelOf
		Info *struct {
			codexModelOf
			Total *codexTokens `json:"total_token_usage"`
			Last  *codexTokens `json:"last_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

// codexFallbackModel is the model of a token count before any turn
// context named one (rollouts of early 2025), as ccusage assumes.
const codexFallbackModel = "gpt-5"

// codexCall reads the call a Codex rollout line records: a token_count
// event's last call (or, when it gives only the running totals, their
// growth since the last totals); a turn context names the model of the
// calls after it.
func (r *Reader) codexCall(line []byte) (Call, bool) {
	// Most of a rollout's lines are neither: passed over without a parse
	// (or a copy).
	if !bytes.Contains(line, []byte(`"turn_context"`)) && !bytes.Contains(line, []byte(`"token_count"`)) {
		return Call{}, false
	}
	var l codexLine
	if json.Unmarshal(line, &l) != nil || l.Payload == nil {
		return Call{}, false
	}
	p := l.Payload
	if l.Type == "turn_context" {
		if m := p.codexModelOf.name(); m != "" {
			r.codexModel = m
		}
		return Call{}, false
	}
	if l.Type != "event_msg" || p.Type != "token_count" || p.Info == nil {
		return Call{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, l.Timestamp)
	if err != nil {
		return Call{}, false
	}
	last := p.Info.Last
	if last == nil && p.Info.Total != nil {
		d := *p.Info.Total
		if prev := r.codexTotals; prev != nil {
			d = codexTokens{Input: max(d.Input-prev.Input, 0), Cached: max(d.Cached-prev.Cached, 0),
				Output: max(d.Output-prev.Output, 0), Reasoning: max(d.Reasoning-prev.Reasoning, 0), Total: max(d.Total-prev.Total, 0)}
		}
		last = &d
	}
	if p.Info.Total != nil {
		t := *p.Info.Total
		r.codexTotals = &t
	}
	if last == nil || (last.Input == 0 && last.Cached == 0 && last.Output == 0 && last.Reasoning == 0) {
		return Call{}, false
	}
	model := p.codexModelOf.name()
	if model == "" {
		model = p.Info.codexModelOf.name()
	}
	if model != "" {
		r.codexModel = model
	}
	if model == "" {
		model = r.codexModel
	}
	if model == "" {
		model = codexFallbackModel
		r.codexModel = model
	}
	// Codex's input counts the cached input within it; reasoning is
	// within the output.
	cached := min(last.Cached, last.Input)
	return Call{Turn: true, At: at, Provider: "openai", Model: model, Input: last.Input - cached, CacheRead: cached, Output: last.Output}, true
}
