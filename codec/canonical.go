package codec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentcore/sessionlog/session"
)

// canonical re-encodes a JSON value the way pi's digests see it: object
// keys sorted by UTF-16 code units, no whitespace, strings escaped as
// JSON.stringify does and numbers as JavaScript prints them.
func canonical(data []byte) ([]byte, error) {
	r := getReader(data)
	defer putReader(r)
	out, err := r.canonical(nil)
	if err != nil {
		return nil, malformed(err)
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return out, nil
}

type member struct {
	key string
	val []byte
}

func (r *reader) canonical(b []byte) ([]byte, error) {
	switch k := r.d.PeekKind(); k {
	case '{':
		var members []member
		err := r.object("value", func(key string) error {
			v, err := r.canonical(nil)
			members = append(members, member{key, v})
			return err
		})
		if err != nil {
			return b, err
		}
		slices.SortStableFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
		b = append(b, '{')
		for i, m := range members {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m.key)
			b = append(b, ':')
			b = append(b, m.val...)
		}
		return append(b, '}'), nil
	case '[':
		if _, err := r.d.ReadToken(); err != nil {
			return b, err
		}
		b = append(b, '[')
		for n := 0; r.d.PeekKind() != ']'; n++ {
			if n > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = r.canonical(b); err != nil {
				return b, err
			}
		}
		_, err := r.d.ReadToken()
		return append(b, ']'), err
	case '"':
		v, err := r.d.ReadValue()
		if err != nil {
			return b, err
		}
		return appendString(b, string(r.unquoted(v))), nil
	case '0':
		v, err := r.d.ReadValue()
		if err != nil {
			return b, err
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return b, err // out of range
		}
		return appendFloat(b, f, "number", nil)
	case 'n', 't', 'f':
		v, err := r.d.ReadValue()
		return append(b, v...), err
	default:
		_, err := r.d.ReadToken()
		if err == nil {
			err = fmt.Errorf("unexpected %v", k)
		}
		return b, err
	}
}

// compareUTF16 orders strings as JavaScript's default sort does.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if ra < 0x10000 && rb < 0x10000 {
				return int(ra) - int(rb)
			}
			ua := utf16.AppendRune(nil, ra)
			ub := utf16.AppendRune(nil, rb)
			return slices.Compare(ua, ub)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// MessageDigest is the lowercase-hex SHA-256 of the message's canonical
// JSON, the digest pi's tooling uses to compare contexts.
func MessageDigest(m *session.Message) (string, error) {
	b, err := EncodeMessage(m)
	if err != nil {
		return "", err
	}
	return digest(b)
}

// ContentDigest digests only the message content (or its summary for the
// summary roles).
func ContentDigest(m *session.Message) (string, error) {
	var b []byte
	var err error
	switch m.Role {
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		var summary string
		if s := m.Summary(); s != nil {
			summary = s.Summary
		}
		b = appendString(nil, summary)
	default:
		b, err = appendContent(nil, m.Content, nil)
	}
	if err != nil {
		return "", err
	}
	return digest(b)
}

func digest(b []byte) (string, error) {
	c, err := canonical(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
