package session

import "strings"

// oneLineName is a name as pi 1.6's appendSessionInfo writes it: runs of
// line breaks become one space, and the ends are trimmed.
func oneLineName(name string) string {
	var b strings.Builder
	brk := false
	for _, r := range name {
		if r == '\r' || r == '\n' {
			brk = true
			continue
		}
		if brk {
			b.WriteByte(' ')
			brk = false
		}
		b.WriteRune(r)
	}
	if brk {
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}
