package codec

import (
	"fmt"

	"github.com/agentcore/sessionlog/session"
)

// Content blocks: each type's members in its body (session.BlockBody),
// written in the one member order pi's block types share.

func appendBlock(b []byte, c *session.ContentBlock) ([]byte, error) {
	var f blockFlat
	switch body := c.Body.(type) {
	case *session.VerbatimBlock:
		if !jsontextValid(body.Value) {
			return b, fmt.Errorf("%w: content element is not valid JSON", ErrInvalid)
		}
		return append(b, body.Value...), nil
	case *session.SignedText:
		f.TextSignature = body.TextSignature
	case *session.ThinkingBlock:
		f.Thinking, f.ThinkingSignature, f.Redacted = body.Thinking, body.ThinkingSignature, body.Redacted
	case *session.ImageBlock:
		f.Data, f.MimeType = body.Data, body.MimeType
	case *session.ToolCallBlock:
		f.ID, f.Name, f.Arguments, f.ThoughtSignature = body.ID, body.Name, body.Arguments, body.ThoughtSignature
	}
	return appendBlockFlat(b, c, &f)
}

// appendBlockFlat is appendBlock writing c's type, text and verbatim
// members with the other members in f.
func appendBlockFlat(b []byte, c *session.ContentBlock, f *blockFlat) ([]byte, error) {
	t := c.Type
	w := newObjIn(b, c.Extra, c.Layout)
	w.str("type", t, false)
	w.str("text", c.Text, t == session.BlockText)
	w.str("textSignature", f.TextSignature, false)
	w.str("thinking", f.Thinking, t == session.BlockThinking)
	w.str("thinkingSignature", f.ThinkingSignature, false)
	w.bool("redacted", f.Redacted, false)
	w.str("data", f.Data, t == session.BlockImage)
	w.str("mimeType", f.MimeType, t == session.BlockImage)
	w.str("id", f.ID, t == session.BlockToolCall)
	w.str("name", f.Name, t == session.BlockToolCall)
	w.raw("arguments", f.Arguments, t == session.BlockToolCall, "{}")
	w.str("thoughtSignature", f.ThoughtSignature, false)
	return w.close()
}

func (r *reader) block(c *session.ContentBlock) error {
	var fs fieldSet
	var f blockFlat
	var k byKind
	defines := func(key string) bool { return session.BlockDefines(c.Type, key) }
	own := func(key string) error {
		switch key {
		case "text":
			return r.str(key, &c.Text, &fs)
		case "textSignature":
			return r.str(key, &f.TextSignature, &fs)
		case "thinking":
			return r.str(key, &f.Thinking, &fs)
		case "thinkingSignature":
			return r.str(key, &f.ThinkingSignature, &fs)
		case "redacted":
			return r.boolean(key, &f.Redacted, &fs)
		case "data":
			return r.str(key, &f.Data, &fs)
		case "mimeType":
			return r.sym(key, &f.MimeType, &fs)
		case "id":
			return r.str(key, &f.ID, &fs)
		case "name":
			return r.sym(key, &f.Name, &fs)
		case "arguments":
			return r.raw(&f.Arguments)
		case "thoughtSignature":
			return r.str(key, &f.ThoughtSignature, &fs)
		}
		return r.keepUnknown(key, &fs)
	}
	err := r.objectIn("content block", &c.Layout, func() (*order, *[]session.Field) {
		_ = r.kindRead(&k, &fs, defines, own) // no type: nothing to decode, all kept
		c.Extra = fs.finish(blockRequires(c.Type))
		return orders().block, &c.Extra
	}, func(key string) error {
		if key == "type" {
			if err := r.sym(key, &c.Type, &fs); err != nil {
				return err
			}
			return r.kindRead(&k, &fs, defines, own)
		}
		return r.member(&k, key, &fs, defines, own)
	})
	c.Body = f.body(c.Type)
	return err
}

// blockFlat is every block type's members but text's, side by side, as
// the decoder reads them; the block gets the body of its type.
type blockFlat struct {
	TextSignature               string
	Thinking, ThinkingSignature string
	Redacted                    bool
	Data, MimeType              string
	ID, Name                    string
	Arguments                   session.Raw
	ThoughtSignature            string
}

func (f *blockFlat) body(t string) session.BlockBody {
	switch t {
	case session.BlockText:
		if f.TextSignature != "" {
			return &session.SignedText{TextSignature: f.TextSignature}
		}
	case session.BlockThinking:
		return &session.ThinkingBlock{Thinking: f.Thinking, ThinkingSignature: f.ThinkingSignature, Redacted: f.Redacted}
	case session.BlockImage:
		return &session.ImageBlock{Data: f.Data, MimeType: f.MimeType}
	case session.BlockToolCall:
		return &session.ToolCallBlock{ID: f.ID, Name: f.Name, Arguments: f.Arguments, ThoughtSignature: f.ThoughtSignature}
	}
	return nil
}

// blockRequires says which members are always written for a block type.
func blockRequires(t string) func(k string) bool {
	return func(k string) bool {
		switch k {
		case "text":
			return t == session.BlockText
		case "thinking":
			return t == session.BlockThinking
		case "data", "mimeType":
			return t == session.BlockImage
		case "id", "name":
			return t == session.BlockToolCall
		}
		return false
	}
}
