package session

// BlockBody is the members of one content block type other than text:
// each has a struct of its own. The set is closed: only this package's
// types implement it.
type BlockBody interface {
	// BlockType is the type of block this body belongs to ("" for a
	// verbatim element).
	BlockType() string
	clone() BlockBody
}

// ThinkingBlock is a thinking block's members.
type ThinkingBlock struct {
	Thinking          string
	ThinkingSignature string
	Redacted          bool
}

// ImageBlock is an image block's members: the image as base64 and its
// media type.
type ImageBlock struct {
	Data     string
	MimeType string
}

// ToolCallBlock is a toolCall block's members.
type ToolCallBlock struct {
	ID               string
	Name             string
	Arguments        Raw
	ThoughtSignature string
}

// SignedText is a text block's signature (OpenAI's responses sign text
// for the next turn); a text block without one has no body.
type SignedText struct {
	TextSignature string
}

// VerbatimBlock is a content element that was not a JSON object, kept as
// read.
type VerbatimBlock struct {
	Value Raw
}

// BlockType implementations.
func (*ThinkingBlock) BlockType() string { return BlockThinking }
func (*ImageBlock) BlockType() string    { return BlockImage }
func (*ToolCallBlock) BlockType() string { return BlockToolCall }
func (*VerbatimBlock) BlockType() string { return "" }
func (*SignedText) BlockType() string    { return BlockText }

func (b *ThinkingBlock) clone() BlockBody { c := *b; return &c }
func (b *ImageBlock) clone() BlockBody    { c := *b; return &c }
func (b *ToolCallBlock) clone() BlockBody {
	c := *b
	c.Arguments = cloneRaw(b.Arguments)
	return &c
}
func (b *VerbatimBlock) clone() BlockBody { return &VerbatimBlock{Value: cloneRaw(b.Value)} }
func (b *SignedText) clone() BlockBody    { c := *b; return &c }

// NewBlockBody returns an empty body of block type t, or nil for text
// blocks and types this version does not know: decoders fill it.
func NewBlockBody(t string) BlockBody {
	switch t {
	case BlockThinking:
		return &ThinkingBlock{}
	case BlockImage:
		return &ImageBlock{}
	case BlockToolCall:
		return &ToolCallBlock{}
	}
	return nil
}

// Thinking returns a thinking block's body, else nil.
func (b *ContentBlock) Thinking() *ThinkingBlock { t, _ := b.Body.(*ThinkingBlock); return t }

// Image returns an image block's body, else nil.
func (b *ContentBlock) Image() *ImageBlock { t, _ := b.Body.(*ImageBlock); return t }

// ToolCall returns a toolCall block's body, else nil.
func (b *ContentBlock) ToolCall() *ToolCallBlock { t, _ := b.Body.(*ToolCallBlock); return t }

// bodyFits reports whether b's body is one its type has: the type's own
// for thinking, image and toolCall; none or a signature for text; none
// for types this version does not know.
func (b *ContentBlock) bodyFits() bool {
	if isNil(b.Body) {
		return b.Body == nil && NewBlockBody(b.Type) == nil
	}
	return b.Body.BlockType() == b.Type
}

// TextSignature is a text block's signature ("" for none).
func (b *ContentBlock) TextSignature() string {
	if s, ok := b.Body.(*SignedText); ok {
		return s.TextSignature
	}
	return ""
}

// Verbatim returns the element of a content element that was not a JSON
// object, else nil.
func (b *ContentBlock) Verbatim() Raw {
	if v, ok := b.Body.(*VerbatimBlock); ok {
		return v.Value
	}
	return nil
}
