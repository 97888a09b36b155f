package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// The two checks of an entry on its own: ValidateLoad, what a loader
// applies to a file's entries (so that files written by others still
// load), and ValidateWrite, the stricter one every write applies.

// ValidateLoad checks what can be checked of an entry on its own.
func ValidateLoad(e *Entry) error {
	if err := validateShape(e); err != nil {
		return err
	}
	return validateRaws(e)
}

// ValidateWrite checks every member pi defines of a known entry type —
// its kind, its range, and the members the type requires — beyond what
// ValidateLoad checks. It is what every write applies (Tree.CheckBatch):
// whatever passes is written, and read back, by every backend and by pi.
// Loaders do not apply it, so files written by others still load.
// Entries of unknown types are checked only as ValidateLoad does.
func ValidateWrite(e *Entry) error { return validateWrite(e, false) }

// ValidateWriteParsed is ValidateWrite of an entry whose verbatim values
// its caller made from JSON it read as strictly as ValidateWrite would (no
// member name twice, valid UTF-8: jsontext's defaults): that reading, the
// costliest check of a large value, is not made again. Every other check
// is (nesting, numbers, every member).
func ValidateWriteParsed(e *Entry) error { return validateWrite(e, true) }

func validateWrite(e *Entry, parsed bool) error {
	// ValidateLoad's check of verbatim values is left to raws below,
	// which is stricter: each value is read once.
	if err := validateShape(e); err != nil {
		return err
	}
	v := fieldCheck{id: e.ID, parsed: parsed}
	if _, err := time.Parse(time.RFC3339Nano, e.Timestamp); err != nil {
		v.fail(root.at("timestamp"), fmt.Sprintf("%q is not an ISO-8601 time such as 2025-01-04T00:59:36.639Z", clip(e.Timestamp)))
	}
	v.raws(e)
	if !typeName(string(e.Type)) {
		v.fail(root.at("type"), fmt.Sprintf("%q is not a type name: 1 to %d letters, digits, '_' or '-'", clip(string(e.Type)), MaxTypeLen))
	}
	members, known := entryMembers[e.Type]
	if !known {
		return v.err
	}
	for _, f := range e.Extra {
		switch f.Key {
		case "type", "id", "parentId", "timestamp":
			v.fail(root.at(f.Key), "is set twice")
		}
	}
	refKind := "entry"
	if e.Type != TypeCustomMessage {
		refKind = ""
	}
	v.extra(root, "", e.Extra, members, nil, refKind)
	if e.Message != nil {
		v.message(root.at("message"), e.Message)
	}
	// validateShape saw that the body is of the entry's type.
	switch b := e.Body.(type) {
	case *ThinkingLevelChange:
		if !thinkingLevels[b.ThinkingLevel] {
			v.fail(root.at("thinkingLevel"), fmt.Sprintf("%q is not one of off, minimal, low, medium, high, xhigh", clip(b.ThinkingLevel)))
		}
	case *ModelChange:
		v.name(root.at("provider"), b.Provider)
		v.name(root.at("modelId"), b.ModelID)
	case *ActiveToolsChange:
		for i, t := range b.ActiveTools {
			v.name(root.at("activeTools").item(i), t)
		}
	case *Compaction:
		if b.FirstKeptEntryID == "" {
			v.fail(root.at("firstKeptEntryId"), "is required: the entry the kept context starts from")
		} else if err := ValidateID(b.FirstKeptEntryID); err != nil {
			v.fail(root.at("firstKeptEntryId"), err.Error())
		}
		v.count(root.at("tokensBefore"), b.TokensBefore)
		for i := range b.RetainedTail {
			v.message(root.at("retainedTail").item(i), &b.RetainedTail[i])
		}
		v.usage(root.at("usage"), b.Usage)
		if m := b.SystemMessage; m != nil {
			v.message(root.at("systemMessage"), m)
			if m.Role != RoleSystem {
				v.fail(root.at("systemMessage").at("role"), fmt.Sprintf("is %q: a compaction's systemMessage is a system message", clip(m.Role)))
			}
		}
	case *BranchSummary:
		if b.FromID == "" {
			v.fail(root.at("fromId"), "is required: the leaf the branch was left from")
		} else if len(b.FromID) > MaxIDLen {
			v.fail(root.at("fromId"), fmt.Sprintf("is %d bytes (max %d)", len(b.FromID), MaxIDLen))
		}
		v.usage(root.at("usage"), b.Usage)
	case *UsageRecord:
		v.name(root.at("kind"), b.Kind)
		v.name(root.at("provider"), b.Provider)
		v.name(root.at("model"), b.Model)
		if b.Usage == nil {
			v.fail(root.at("usage"), "is required: the tokens and cost used")
		}
		v.usage(root.at("usage"), b.Usage)
		if len(b.Note) > MaxNameLen {
			v.fail(root.at("note"), fmt.Sprintf("is %d bytes (max %d)", len(b.Note), MaxNameLen))
		}
	case *ContextEdit:
		v.contextEdit(b)
	case *Custom:
		v.name(root.at("customType"), b.CustomType)
	case *CustomMessage:
		v.name(root.at("customType"), b.CustomType)
		if b.Content.IsZero() && !HasBlobRef(e.Extra, "content") {
			v.fail(root.at("content"), "is required (a string or content blocks)")
		}
		v.content(root.at("content"), b.Content, blocksUser)
	case *Label:
		if len(b.Label) > MaxNameLen {
			v.fail(root.at("label"), fmt.Sprintf("is %d bytes (max %d)", len(b.Label), MaxNameLen))
		}
	case *NameChange:
		if len(b.Name) > MaxNameLen {
			v.fail(root.at("name"), fmt.Sprintf("is %d bytes (max %d)", len(b.Name), MaxNameLen))
		}
	}
	return v.err
}

// validateShape is ValidateLoad but for its verbatim JSON values, which
// ValidateWrite checks more strictly.
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
