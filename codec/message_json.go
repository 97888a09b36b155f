package codec

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// messageRequires says which members pi always writes for a message role.
func messageRequires(role, key string) bool {
	switch key {
	case "role", "timestamp":
		return true
	case "content":
		return role == session.RoleUser || role == session.RoleAssistant ||
			role == session.RoleToolResult || role == session.RoleCustom || role == session.RoleSystem
	case "api", "provider", "model", "usage", "stopReason":
		return role == session.RoleAssistant
	case "toolCallId", "toolName", "isError":
		return role == session.RoleToolResult
	case "customType", "display":
		return role == session.RoleCustom
	case "summary":
		return role == session.RoleCompactionSummary || role == session.RoleBranchSummary
	case "tokensBefore":
		return role == session.RoleCompactionSummary
	case "fromId":
		return role == session.RoleBranchSummary
	}
	return false
}

func appendMessage(b []byte, m *session.Message) ([]byte, error) {
	var f messageFlat
	switch body := m.Body.(type) {
	case *session.AssistantFields:
		f.AssistantFields = *body
	case *session.ToolResultFields:
		f.ToolCallID, f.ToolName, f.IsError, f.Details = body.ToolCallID, body.ToolName, body.IsError, body.Details
	case *session.CustomFields:
		f.CustomType, f.Display, f.Details = body.CustomType, body.Display, body.Details
	case *session.SummaryFields:
		f.Summary, f.TokensBefore, f.FromID = body.Summary, body.TokensBefore, body.FromID
	}
	return appendMessageFlat(b, m, &f)
}

// appendMessageFlat is appendMessage writing m's role, content, timestamp
// and verbatim members with the other members in f.
func appendMessageFlat(b []byte, m *session.Message, f *messageFlat) ([]byte, error) {
	req := func(k string) bool { return messageRequires(m.Role, k) }
	w := newObjIn(b, m.Extra, m.Layout)
	w.str("role", m.Role, true)
	w.str("customType", f.CustomType, req("customType"))
	w.str("toolCallId", f.ToolCallID, req("toolCallId"))
	w.str("toolName", f.ToolName, req("toolName"))
	if w.want("content", !m.Content.IsZero(), req("content")) {
		w.key("content")
		w.b, w.err = appendContent(w.b, m.Content, w.err)
	}
	w.bool("display", f.Display, req("display"))
	w.str("summary", f.Summary, req("summary"))
	w.int("tokensBefore", f.TokensBefore, req("tokensBefore"))
	w.str("fromId", f.FromID, req("fromId"))
	w.str("api", f.API, req("api"))
	w.str("provider", f.Provider, req("provider"))
	w.str("model", f.Model, req("model"))
	w.str("responseId", f.ResponseID, false)
	if w.want("usage", f.Usage != nil, req("usage")) {
		w.key("usage")
		u := f.Usage
		if u == nil {
			u = &session.Usage{}
		}
		w.b, w.err = appendUsage(w.b, u, w.err)
	}
	w.str("stopReason", f.StopReason, req("stopReason"))
	w.str("errorMessage", f.ErrorMessage, false)
	w.raw("details", f.Details, false, "")
	w.bool("isError", f.IsError, req("isError"))
	// Every pi message shape ends with its timestamp. An Extra timestamp
	// (one of the wrong kind, as read) gives way to a set one.
	if m.Timestamp != 0 {
		w.flushExtra("timestamp")
	} else {
		w.flushExtra()
	}
	w.int("timestamp", m.Timestamp, true)
	return w.close()
}

func appendContent(b []byte, c session.Content, prev error) ([]byte, error) {
	if c.Plain && len(c.Blocks) == 1 && c.Blocks[0].Type == session.BlockText && len(c.Blocks[0].Extra) == 0 && c.Blocks[0].Body == nil {
		return appendString(b, c.Blocks[0].Text), prev
	}
	if c.IsZero() {
		return append(b, `""`...), prev
	}
	b = append(b, '[')
	for i := range c.Blocks {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		b, err = appendBlock(b, &c.Blocks[i])
		if err != nil && prev == nil {
			prev = err
		}
	}
	return append(b, ']'), prev
}

func appendUsage(b []byte, u *session.Usage, prev error) ([]byte, error) {
	w := newObjIn(b, u.Extra, u.Layout)
	w.keepAbsent = true
	w.int("input", u.Input, true)
	w.int("output", u.Output, true)
	w.int("cacheRead", u.CacheRead, true)
	w.int("cacheWrite", u.CacheWrite, true)
	w.int("totalTokens", u.TotalTokens, true)
	w.key("cost")
	var err error
	w.b, err = appendCost(w.b, &u.Cost)
	w.fail(err)
	out, err := w.close()
	if prev != nil {
		err = prev
	}
	return out, err
}

func appendCost(b []byte, c *session.Cost) ([]byte, error) {
	w := newObjIn(b, c.Extra, c.Layout)
	w.keepAbsent = true
	w.float("input", c.Input, true)
	w.float("output", c.Output, true)
	w.float("cacheRead", c.CacheRead, true)
	w.float("cacheWrite", c.CacheWrite, true)
	w.float("total", c.Total, true)
	return w.close()
}

func (r *reader) message(m *session.Message) error {
	var fs fieldSet
	var f messageFlat
	var k byKind
	defines := func(key string) bool { return session.MessageDefines(m.Role, key) }
	own := func(key string) error {
		switch key {
		case "content":
			return r.content(key, &m.Content, &fs)
		case "timestamp":
			return r.integer(key, &m.Timestamp, &fs)
		case "api":
			return r.sym(key, &f.API, &fs)
		case "provider":
			return r.sym(key, &f.Provider, &fs)
		case "model":
			return r.sym(key, &f.Model, &fs)
		case "responseId":
			return r.str(key, &f.ResponseID, &fs)
		case "usage":
			if r.d.PeekKind() != '{' {
				return r.keep(key, &fs)
			}
			f.Usage = &session.Usage{}
			return r.usage(f.Usage)
		case "stopReason":
			return r.sym(key, &f.StopReason, &fs)
		case "errorMessage":
			return r.str(key, &f.ErrorMessage, &fs)
		case "toolCallId":
			return r.str(key, &f.ToolCallID, &fs)
		case "toolName":
			return r.sym(key, &f.ToolName, &fs)
		case "isError":
			return r.boolean(key, &f.IsError, &fs)
		case "details":
			return r.raw(&f.Details)
		case "customType":
			return r.sym(key, &f.CustomType, &fs)
		case "display":
			return r.boolean(key, &f.Display, &fs)
		case "summary":
			return r.str(key, &f.Summary, &fs)
		case "tokensBefore":
			return r.integer(key, &f.TokensBefore, &fs)
		case "fromId":
			return r.str(key, &f.FromID, &fs)
		}
		return r.keepUnknown(key, &fs)
	}
	err := r.objectIn("message", &m.Layout, func() (*order, *[]session.Field) {
		_ = r.kindRead(&k, &fs, defines, own) // no role: content and timestamp only, decoded as read
		m.Extra = fs.finish(func(key string) bool { return messageRequires(m.Role, key) })
		return orders().message, &m.Extra
	}, func(key string) error {
		switch key {
		case "role":
			if err := r.sym(key, &m.Role, &fs); err != nil {
				return err
			}
			return r.kindRead(&k, &fs, defines, own)
		case "content", "timestamp":
			return own(key) // every role's
		}
		return r.member(&k, key, &fs, defines, own)
	})
	m.Body = f.body(m.Role)
	return err
}

// messageFlat is every role's members but those all roles have, side by
// side, as the decoder reads them; the message gets the body of its role.
type messageFlat struct {
	session.AssistantFields
	ToolCallID, ToolName string
	IsError              bool
	Details              session.Raw
	CustomType           string
	Display              bool
	Summary              string
	TokensBefore         int64
	FromID               string
}

func (f *messageFlat) body(role string) session.MessageBody {
	switch role {
	case session.RoleAssistant:
		a := f.AssistantFields
		return &a
	case session.RoleToolResult:
		return &session.ToolResultFields{ToolCallID: f.ToolCallID, ToolName: f.ToolName, IsError: f.IsError, Details: f.Details}
	case session.RoleCustom:
		return &session.CustomFields{CustomType: f.CustomType, Display: f.Display, Details: f.Details}
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		return &session.SummaryFields{Summary: f.Summary, TokensBefore: f.TokensBefore, FromID: f.FromID}
	}
	return nil
}

func (r *reader) content(key string, c *session.Content, fs *fieldSet) error {
	switch r.d.PeekKind() {
	case '"':
		text, err := r.readString()
		if err != nil {
			return err
		}
		*c = session.TextContent(text)
		return nil
	case '[':
	default:
		return r.keep(key, fs)
	}
	if _, err := r.d.ReadToken(); err != nil {
		return err
	}
	// Blocks gather in the reader's buffer and are copied out at their
	// count: grown by append, a message's blocks would hold up to twice
	// their size (a block is some 240 bytes). Contents do not nest.
	blocks := r.blocks[:0]
	for r.d.PeekKind() != ']' {
		var blk session.ContentBlock
		if r.d.PeekKind() != '{' {
			// Not a block: keep the element verbatim in a block of no type.
			v := &session.VerbatimBlock{}
			if err := r.raw(&v.Value); err != nil {
				return err
			}
			blk.Body = v
		} else if err := r.block(&blk); err != nil {
			return err
		}
		blocks = append(blocks, blk)
	}
	c.Blocks = make([]session.ContentBlock, len(blocks))
	copy(c.Blocks, blocks)
	clear(blocks)
	r.blocks = blocks[:0]
	_, err := r.d.ReadToken()
	return err
}

func (r *reader) usage(u *session.Usage) error {
	// All usage members are always written, so zeros need no keeping.
	fs := fieldSet{noZeros: true}
	return r.objectIn("usage", &u.Layout, func() (*order, *[]session.Field) {
		u.Extra = fs.extra
		return orders().usage, &u.Extra
	}, func(key string) error {
		switch key {
		case "input":
			return r.integer(key, &u.Input, &fs)
		case "output":
			return r.integer(key, &u.Output, &fs)
		case "cacheRead":
			return r.integer(key, &u.CacheRead, &fs)
		case "cacheWrite":
			return r.integer(key, &u.CacheWrite, &fs)
		case "totalTokens":
			return r.integer(key, &u.TotalTokens, &fs)
		case "cost":
			if r.d.PeekKind() != '{' {
				return r.keep(key, &fs)
			}
			var cfs fieldSet
			return r.objectIn("usage.cost", &u.Cost.Layout, func() (*order, *[]session.Field) {
				u.Cost.Extra = cfs.extra
				return orders().cost, &u.Cost.Extra
			}, func(key string) error {
				switch key {
				case "input":
					return r.float(key, &u.Cost.Input, &cfs)
				case "output":
					return r.float(key, &u.Cost.Output, &cfs)
				case "cacheRead":
					return r.float(key, &u.Cost.CacheRead, &cfs)
				case "cacheWrite":
					return r.float(key, &u.Cost.CacheWrite, &cfs)
				case "total":
					return r.float(key, &u.Cost.Total, &cfs)
				}
				return r.keepUnknown(key, &cfs)
			})
		}
		return r.keepUnknown(key, &fs)
	})
}

// DecodeMessage decodes one agent message from JSON.
func DecodeMessage(data []byte) (*session.Message, error) {
	r := getReader(data)
	defer putReader(r)
	m := &session.Message{}
	if err := r.message(m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return m, nil
}

// EncodeMessage encodes one agent message as JSON.
func EncodeMessage(m *session.Message) ([]byte, error) {
	return appendMessage(nil, m)
}

func jsontextValid(v []byte) bool { return jsontext.Value(v).IsValid(decoderOpts...) }
