package session

import "fmt"

// contextEdit checks a context_edit on its own: a target, and a
// replacement that is null or holds content. That the target is an
// editable entry on the edit's branch is checked against the tree
// (Tree.CheckBatch).
func (v *fieldCheck) contextEdit(e *ContextEdit) {
	if e.TargetID == "" {
		v.fail(root.at("targetId"), "is required: the entry whose content the edit replaces or removes")
	} else if err := ValidateID(e.TargetID); err != nil {
		v.fail(root.at("targetId"), err.Error())
	}
	at := root.at("replacement")
	switch c := e.Replacement; {
	case c == nil:
		v.fail(at, `is required: null to leave the target out of the context, or {"content": …} to replace its content`)
	case c.Remove:
	default:
		v.extra(at, "a replacement", c.Extra, replacementMembers, nil, "message")
		if c.Content.IsZero() && !HasBlobRef(c.Extra, "content") {
			v.fail(at.at("content"), "is required (a string or content blocks)")
		}
		// An assistant message's content may be replaced: its blocks.
		v.content(at.at("content"), c.Content, blocksAssistant)
	}
}

// editable reports why e cannot be a context_edit's target ("" if it
// can): pi edits what a message or custom_message gives the model.
func editable(e *Entry) string {
	switch {
	case e.Type == TypeCustomMessage:
		return ""
	case e.Type == TypeMessage && e.Message != nil:
		switch e.Message.Role {
		case RoleUser, RoleAssistant, RoleToolResult:
			return ""
		}
		return fmt.Sprintf("is a %s message: only user, assistant and toolResult messages and custom_message entries can be edited", e.Message.Role)
	}
	return fmt.Sprintf("is a %s entry: only user, assistant and toolResult messages and custom_message entries can be edited", e.Type)
}
