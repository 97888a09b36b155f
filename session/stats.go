package session

import (
	"maps"
	"strings"
	"unicode"
)

// Stats summarises a whole session (every branch).
type Stats struct {
	Entries int
	ByType  map[EntryType]int
	// Messages counts message entries; ByRole splits them by role.
	Messages int
	ByRole   map[string]int
	// ToolCalls counts toolCall blocks in assistant messages.
	ToolCalls int
	// Compactions and BranchSummaries count those entries.
	Compactions     int
	BranchSummaries int
	// Usage sums the usage of assistant messages, compactions, branch
	// summaries and usage entries.
	Usage Usage
	// DerivedTotals counts the usages summed whose total was derived from
	// their parts (Usage.Derived): files of pi 0.x have none.
	DerivedTotals int `json:",omitempty" msgpack:",omitempty"`
	// Redactions counts the secrets replaced on write (CountRedactions).
	Redactions int `json:",omitempty" msgpack:",omitempty"`
	// FirstUser is the start of the first user message's text (what pi's
	// session picker shows of a session), at most FirstUserRunes runes on
	// one line.
	FirstUser string `json:",omitempty" msgpack:",omitempty"`
	// Model is the model of the last assistant message or model change.
	Model string `json:",omitempty" msgpack:",omitempty"`
}

// FirstUserRunes bounds Stats.FirstUser.
const FirstUserRunes = 160

func newStats() Stats {
	return Stats{ByType: map[EntryType]int{}, ByRole: map[string]int{}}
}

// add counts e, which holds redactions redaction marks.
func (s *Stats) add(e *Entry, redactions int) {
	s.Entries++
	s.Redactions += redactions
	s.ByType[e.Type]++
	switch e.Type {
	case TypeMessage:
		m := e.Message
		s.Messages++
		s.ByRole[m.Role]++
		s.addUsage(m.Usage())
		if m.Role == RoleUser && s.FirstUser == "" {
			if text := m.Content.Paragraphs(); !injected(text) {
				s.FirstUser = oneLine(text, FirstUserRunes)
			}
		}
		if a := m.Assistant(); a != nil && a.Model != "" {
			s.Model = a.Model
		}
		if m.Role == RoleAssistant {
			for i := range m.Content.Blocks {
				if m.Content.Blocks[i].Type == BlockToolCall {
					s.ToolCalls++
				}
			}
		}
	case TypeModelChange:
		if b := e.ModelChange(); b != nil && b.ModelID != "" {
			s.Model = b.ModelID
		}
	case TypeCompaction:
		s.Compactions++
		if b := e.Compaction(); b != nil {
			s.addUsage(b.Usage)
		}
	case TypeBranchSummary:
		s.BranchSummaries++
		if b := e.BranchSummary(); b != nil {
			s.addUsage(b.Usage)
		}
	case TypeUsage:
		if b := e.UsageRecord(); b != nil {
			s.addUsage(b.Usage)
		}
	}
}

func (s *Stats) addUsage(u *Usage) {
	if u != nil && u.Derived() {
		s.DerivedTotals++
	}
	s.Usage.Add(u)
}

func (s Stats) clone() Stats {
	s.ByType = maps.Clone(s.ByType)
	s.ByRole = maps.Clone(s.ByRole)
	s.Usage.Extra = nil
	s.Usage.Cost.Extra = nil
	return s
}

// injectedPrefixes start the user messages agents write themselves, not
// their user: Codex's instructions and environment, Claude Code's echoes
// of local commands and its reminders. They say nothing of what a session
// is about, so the first message a list shows is the first one typed.
var injectedPrefixes = []string{"# AGENTS.md instructions", "<environment_context>", "<user_instructions>", "<INSTRUCTIONS>",
	"<local-command-caveat>", "<command-name>", "<command-message>", "<local-command-stdout>", "<system-reminder>", "Caveat: The messages below"}

func injected(text string) bool {
	text = strings.TrimLeftFunc(text, unicode.IsSpace)
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// oneLine is text with its runs of white space made one space, cut to at
// most max runes.
func oneLine(text string, max int) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n == max {
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
			if n == max {
				break
			}
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
