package session

// MessageBody is the members of one message role beyond role, content
// and timestamp: each role that has more has a struct of its own. The set
// is closed: only this package's types implement it.
type MessageBody interface {
	// belongsTo reports whether the body belongs to messages of role.
	belongsTo(role string) bool
	clone() MessageBody
}

// AssistantFields is an assistant message's members: the model that
// answered, what it cost and how it ended.
type AssistantFields struct {
	API          string
	Provider     string
	Model        string
	ResponseID   string
	Usage        *Usage
	StopReason   string
	ErrorMessage string
}

// ToolResultFields is a tool result's members.
type ToolResultFields struct {
	ToolCallID string
	ToolName   string
	IsError    bool
	Details    Raw
}

// CustomFields is a custom message's members (an extension's message).
type CustomFields struct {
	CustomType string
	Display    bool
	Details    Raw
}

// SummaryFields is a compactionSummary's or branchSummary's members:
// TokensBefore is a compaction's, FromID a branch summary's.
type SummaryFields struct {
	Summary      string
	TokensBefore int64
	FromID       string
}

func (*AssistantFields) belongsTo(role string) bool  { return role == RoleAssistant }
func (*ToolResultFields) belongsTo(role string) bool { return role == RoleToolResult }
func (*CustomFields) belongsTo(role string) bool     { return role == RoleCustom }
func (*SummaryFields) belongsTo(role string) bool {
	return role == RoleCompactionSummary || role == RoleBranchSummary
}

func (b *AssistantFields) clone() MessageBody { c := *b; c.Usage = b.Usage.Clone(); return &c }
func (b *ToolResultFields) clone() MessageBody {
	c := *b
	c.Details = cloneRaw(b.Details)
	return &c
}
func (b *CustomFields) clone() MessageBody  { c := *b; c.Details = cloneRaw(b.Details); return &c }
func (b *SummaryFields) clone() MessageBody { c := *b; return &c }

// NewMessageBody returns an empty body for messages of role, or nil for
// roles without one: decoders fill it.
func NewMessageBody(role string) MessageBody {
	switch role {
	case RoleAssistant:
		return &AssistantFields{}
	case RoleToolResult:
		return &ToolResultFields{}
	case RoleCustom:
		return &CustomFields{}
	case RoleCompactionSummary, RoleBranchSummary:
		return &SummaryFields{}
	}
	return nil
}

// Assistant returns an assistant message's members, else nil.
func (m *Message) Assistant() *AssistantFields { b, _ := m.Body.(*AssistantFields); return b }

// ToolResult returns a tool result's members, else nil.
func (m *Message) ToolResult() *ToolResultFields { b, _ := m.Body.(*ToolResultFields); return b }

// Custom returns a custom message's members, else nil.
func (m *Message) Custom() *CustomFields { b, _ := m.Body.(*CustomFields); return b }

// Summary returns a summary message's members, else nil.
func (m *Message) Summary() *SummaryFields { b, _ := m.Body.(*SummaryFields); return b }

// Usage is an assistant message's usage (nil for other roles, or none).
func (m *Message) Usage() *Usage {
	if a := m.Assistant(); a != nil {
		return a.Usage
	}
	return nil
}

// Details is a tool result's or custom message's details (nil for other
// roles, or none).
func (m *Message) Details() Raw {
	switch b := m.Body.(type) {
	case *ToolResultFields:
		return b.Details
	case *CustomFields:
		return b.Details
	}
	return nil
}

// bodyFits reports whether m's body is the one its role has: none for a
// role without one.
func (m *Message) bodyFits() bool {
	want := NewMessageBody(m.Role)
	if want == nil || isNil(m.Body) {
		return want == nil && m.Body == nil
	}
	return m.Body.belongsTo(m.Role)
}
