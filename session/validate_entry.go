package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// ValidateEntry checks what can be checked of an entry on its own.
func ValidateEntry(e *Entry) error {
	if err := validateShape(e); err != nil {
		return err
	}
	return validateRaws(e)
}

// validateShape is ValidateEntry but for its verbatim JSON values, which
// ValidateFields checks more strictly.
func validateShape(e *Entry) error {
	if e == nil {
		return fmt.Errorf("%w: nil entry", ErrInvalidEntry)
	}
	if err := ValidateID(e.ID); err != nil {
		return err
	}
	if e.ParentID != "" {
		if err := ValidateID(e.ParentID); err != nil {
			return fmt.Errorf("%w (parentId of %q)", err, e.ID)
		}
	}
	if e.ParentID == e.ID {
		return fmt.Errorf("%w: entry %q is its own parent", ErrInvalidEntry, e.ID)
	}
	switch e.Type {
	case "":
		return fmt.Errorf("%w: entry %q has no type", ErrInvalidEntry, e.ID)
	case TypeSession:
		return fmt.Errorf("%w: entry %q has the header's type %q", ErrInvalidEntry, e.ID, e.Type)
	}
	if err := checkBody(e); err != nil {
		return err
	}
	switch b := e.Body.(type) {
	case nil:
		if e.Type == TypeMessage && e.Message.Role == "" {
			return fmt.Errorf("%w: message entry %q has no role", ErrInvalidEntry, e.ID)
		}
	case *Label:
		if b.TargetID == "" {
			return fmt.Errorf("%w: label entry %q has no targetId", ErrInvalidEntry, e.ID)
		}
	case *Custom:
		if b.CustomType == "" {
			return fmt.Errorf("%w: %s entry %q has no customType", ErrInvalidEntry, e.Type, e.ID)
		}
	case *CustomMessage:
		if b.CustomType == "" {
			return fmt.Errorf("%w: %s entry %q has no customType", ErrInvalidEntry, e.Type, e.ID)
		}
	case *ModelChange:
		if b.Provider == "" || b.ModelID == "" {
			return fmt.Errorf("%w: model_change entry %q needs provider and modelId", ErrInvalidEntry, e.ID)
		}
	case *ThinkingLevelChange:
		if b.ThinkingLevel == "" {
			return fmt.Errorf("%w: thinking_level_change entry %q has no thinkingLevel", ErrInvalidEntry, e.ID)
		}
	}
	if strings.ContainsFunc(string(e.Type), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("%w: entry %q has type %q with spaces or control characters", ErrInvalidEntry, e.ID, e.Type)
	}
	return nil
}

// validateRaws checks that every verbatim JSON field holds JSON, so that
// no backend stores what it could not write back.
func validateRaws(e *Entry) error {
	// The member's name is made only for an error: formatting it for
	// every block was most of a decoded entry's allocations.
	invalid := func(r Raw) bool { return r != nil && !json.Valid(r) }
	bad := func(field string) error {
		return fmt.Errorf("%w: entry %q: %s is not valid JSON", ErrInvalidEntry, e.ID, field)
	}
	check := func(m *Message) (string, bool) {
		if invalid(m.Details()) {
			return "details", true
		}
		for i := range m.Content.Blocks {
			if tc := m.Content.Blocks[i].ToolCall(); tc != nil && invalid(tc.Arguments) {
				return fmt.Sprintf("content[%d].arguments", i), true
			}
		}
		return "", false
	}
	var tail []Message
	switch b := e.Body.(type) {
	case *Compaction:
		if invalid(b.Details) {
			return bad("details")
		}
		tail = b.RetainedTail
	case *BranchSummary:
		if invalid(b.Details) {
			return bad("details")
		}
	case *CustomMessage:
		if invalid(b.Details) {
			return bad("details")
		}
	case *Custom:
		if invalid(b.Data) {
			return bad("data")
		}
	}
	for _, f := range e.Extra {
		if invalid(f.Value) {
			return bad(f.Key)
		}
	}
	if e.Message != nil {
		if field, ok := check(e.Message); ok {
			return bad("message." + field)
		}
	}
	for i := range tail {
		if field, ok := check(&tail[i]); ok {
			return bad(fmt.Sprintf("retainedTail[%d].%s", i, field))
		}
	}
	return nil
}
