package codec

import "github.com/agentcore/sessionlog/session"

// flat is every known entry type's members side by side, as one JSON
// object may hold them. The decoder reads an entry's members into it
// (a line may name its type after them) and gives the entry the body of
// its type; the encoder writes from it, in the one member order pi's
// types share. It never leaves the codec: a session.Entry holds its own
// type's Body and no other's.
type flat struct {
	ThinkingLevel    string
	Kind             string
	Provider         string
	ModelID          string
	Model            string
	ActiveTools      []string
	FromID           string
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int64
	RetainedTail     []session.Message
	Details          session.Raw
	Usage            *session.Usage
	Note             string
	FromHook         bool
	SystemMessage    *session.Message
	TargetID         string
	Edit             *session.Replacement
	Label            string
	Name             string
	CustomType       string
	Data             session.Raw
	Content          session.Content
	Display          bool
}

// flatten sets f to e's body's members (f is zero for a message, a leaf
// and an unknown type).
func flatten(e *session.Entry, f *flat) {
	*f = flat{}
	switch b := e.Body.(type) {
	case *session.ThinkingLevelChange:
		f.ThinkingLevel = b.ThinkingLevel
	case *session.ModelChange:
		f.Provider, f.ModelID = b.Provider, b.ModelID
	case *session.ActiveToolsChange:
		f.ActiveTools = b.ActiveTools
	case *session.Compaction:
		f.Summary, f.FirstKeptEntryID, f.TokensBefore = b.Summary, b.FirstKeptEntryID, b.TokensBefore
		f.Details, f.FromHook, f.SystemMessage = b.Details, b.FromHook, b.SystemMessage
		f.RetainedTail, f.Usage = b.RetainedTail, b.Usage
	case *session.BranchSummary:
		f.FromID, f.Summary, f.Details, f.FromHook, f.Usage = b.FromID, b.Summary, b.Details, b.FromHook, b.Usage
	case *session.Custom:
		f.CustomType, f.Data = b.CustomType, b.Data
	case *session.CustomMessage:
		f.CustomType, f.Content, f.Display, f.Details = b.CustomType, b.Content, b.Display, b.Details
	case *session.Label:
		f.TargetID, f.Label = b.TargetID, b.Label
	case *session.NameChange:
		f.Name = b.Name
	case *session.UsageRecord:
		f.Kind, f.Provider, f.Model, f.Usage, f.Note = b.Kind, b.Provider, b.Model, b.Usage, b.Note
	case *session.ContextEdit:
		f.TargetID, f.Edit = b.TargetID, b.Replacement
	}
}

// body is the body of type t made of f's members (the decoder put only
// t's own there), or nil for types without one.
func (f *flat) body(t session.EntryType) session.Body {
	switch t {
	case session.TypeThinkingLevelChange:
		return &session.ThinkingLevelChange{ThinkingLevel: f.ThinkingLevel}
	case session.TypeModelChange:
		return &session.ModelChange{Provider: f.Provider, ModelID: f.ModelID}
	case session.TypeActiveToolsChange:
		return &session.ActiveToolsChange{ActiveTools: f.ActiveTools}
	case session.TypeCompaction:
		return &session.Compaction{Summary: f.Summary, FirstKeptEntryID: f.FirstKeptEntryID, TokensBefore: f.TokensBefore,
			Details: f.Details, FromHook: f.FromHook, SystemMessage: f.SystemMessage, RetainedTail: f.RetainedTail, Usage: f.Usage}
	case session.TypeBranchSummary:
		return &session.BranchSummary{FromID: f.FromID, Summary: f.Summary, Details: f.Details, FromHook: f.FromHook, Usage: f.Usage}
	case session.TypeCustom:
		return &session.Custom{CustomType: f.CustomType, Data: f.Data}
	case session.TypeCustomMessage:
		return &session.CustomMessage{CustomType: f.CustomType, Content: f.Content, Display: f.Display, Details: f.Details}
	case session.TypeLabel:
		return &session.Label{TargetID: f.TargetID, Label: f.Label}
	case session.TypeSessionInfo:
		return &session.NameChange{Name: f.Name}
	case session.TypeUsage:
		return &session.UsageRecord{Kind: f.Kind, Provider: f.Provider, Model: f.Model, Usage: f.Usage, Note: f.Note}
	case session.TypeContextEdit:
		return &session.ContextEdit{TargetID: f.TargetID, Replacement: f.Edit}
	}
	return nil
}
