package session

import "maps"

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
	// Redactions counts the secrets replaced on write (CountRedactions).
	Redactions int `json:",omitempty" msgpack:",omitempty"`
}

func newStats() Stats {
	return Stats{ByType: map[EntryType]int{}, ByRole: map[string]int{}}
}

func (s *Stats) add(e *Entry) {
	s.Entries++
	s.Redactions += CountRedactions(e)
	s.ByType[e.Type]++
	switch e.Type {
	case TypeMessage:
		m := e.Message
		s.Messages++
		s.ByRole[m.Role]++
		s.Usage.Add(m.Usage())
		if m.Role == RoleAssistant {
			for i := range m.Content.Blocks {
				if m.Content.Blocks[i].Type == BlockToolCall {
					s.ToolCalls++
				}
			}
		}
	case TypeCompaction:
		s.Compactions++
		if b := e.Compaction(); b != nil {
			s.Usage.Add(b.Usage)
		}
	case TypeBranchSummary:
		s.BranchSummaries++
		if b := e.BranchSummary(); b != nil {
			s.Usage.Add(b.Usage)
		}
	case TypeUsage:
		if b := e.UsageRecord(); b != nil {
			s.Usage.Add(b.Usage)
		}
	}
}

func (s Stats) clone() Stats {
	s.ByType = maps.Clone(s.ByType)
	s.ByRole = maps.Clone(s.ByRole)
	s.Usage.Extra = nil
	s.Usage.Cost.Extra = nil
	return s
}
