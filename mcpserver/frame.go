package mcpserver

// How stored text is framed in the text of a tool result. Models read
// that text, so nothing a session holds may pose as the framing we put
// around it: a stored string shown inside a line of ours is one token or
// a quoted string (its line breaks escaped), and stored text shown as a
// block has every line quoted with "> ", so no stored line can begin
// where our own lines begin ("[role] (entry …)", "session …"). The
// structured content of a result keeps every value exact.

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// inline is a stored string for a line of ours: as it is when it is one
// plain token (ids, roles, timestamps), quoted otherwise.
func inline(s string) string {
	if s != "" && len(s) <= 200 && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:/@+-", r))
	}) {
		return s
	}
	return strconv.Quote(s)
}

// quoted writes stored text as a block: every line begins with "> ".
func quoted(b *strings.Builder, s string) {
	for line := range strings.Lines(s) {
		b.WriteString("> ")
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteByte('\n')
	}
	if s == "" {
		b.WriteString(">\n")
	}
}

// clip keeps at most max bytes of s (whole runes), saying how much was
// left out: one message larger than a whole budget is still bounded.
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[… " + strconv.Itoa(len(s)-cut) + " more bytes of this message left out to fit max_tokens]"
}
