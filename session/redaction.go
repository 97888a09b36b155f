package session

import (
	"bytes"
	"strings"
)

// redactionPrefix begins what a redacted secret is replaced by.
const redactionPrefix = "[REDACTED:"

// RedactionText is what a secret of the named kind is replaced by when
// entries are redacted on write ("[REDACTED:aws-access-key]").
func RedactionText(kind string) string { return redactionPrefix + kind + "]" }

// CountRedactions counts the redacted secrets an entry holds: the
// replacements in its text, thinking, tool arguments, results, details,
// data and the members kept as written. It is what Stats.Redactions sums
// and what event consumers are told of an entry.
func CountRedactions(e *Entry) int {
	if e == nil {
		return 0
	}
	n := countFields(e.Extra)
	if e.Message != nil {
		n += countMessage(e.Message)
	}
	switch b := e.Body.(type) {
	case *Compaction:
		n += countRaw(b.Details) + strings.Count(b.Summary, redactionPrefix)
		for i := range b.RetainedTail {
			n += countMessage(&b.RetainedTail[i])
		}
	case *BranchSummary:
		n += countRaw(b.Details) + strings.Count(b.Summary, redactionPrefix)
	case *Custom:
		n += countRaw(b.Data)
	case *CustomMessage:
		n += countRaw(b.Details) + countContent(b.Content)
	}
	// Content stored apart is counted by its reference.
	for _, r := range e.BlobRefs() {
		n += r.Redactions
	}
	return n
}

func countMessage(m *Message) int {
	n := countContent(m.Content) + countRaw(m.Details()) + countFields(m.Extra)
	switch b := m.Body.(type) {
	case *AssistantFields:
		n += strings.Count(b.ErrorMessage, redactionPrefix)
	case *SummaryFields:
		n += strings.Count(b.Summary, redactionPrefix)
	}
	return n
}

func countContent(c Content) int {
	n := 0
	for i := range c.Blocks {
		b := &c.Blocks[i]
		n += strings.Count(b.Text, redactionPrefix) + countFields(b.Extra)
		switch t := b.Body.(type) {
		case *ThinkingBlock:
			n += strings.Count(t.Thinking, redactionPrefix)
		case *ToolCallBlock:
			n += countRaw(t.Arguments)
		case *VerbatimBlock:
			n += countRaw(t.Value)
		}
	}
	return n
}

func countRaw(r Raw) int { return bytes.Count(r, []byte(redactionPrefix)) }

func countFields(fs []Field) int {
	n := 0
	for _, f := range fs {
		n += countRaw(f.Value)
	}
	return n
}
