package session

import "strings"

// Message roles. User, assistant and tool-result messages are stored in
// message entries; the other three are synthesised into the context from
// compaction, branch_summary and custom_message entries (pi's own shapes).
const (
	RoleUser              = "user"
	RoleAssistant         = "assistant"
	RoleToolResult        = "toolResult"
	RoleCustom            = "custom"
	RoleCompactionSummary = "compactionSummary"
	RoleBranchSummary     = "branchSummary"
	// RoleSystem is pi 1.6's system message: the prompt, and later
	// changes to it and to the tools.
	RoleSystem = "system"
)

// Content block types.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockImage    = "image"
	BlockToolCall = "toolCall"
)

// Message is an agent message as pi stores it: the members every role
// has, and the members of the roles that have more in a Body of that
// role, so a user message is 112 bytes, not the union of every role's
// fields. Unknown members are kept in Extra.
type Message struct {
	Role    string
	Content Content
	// Timestamp is epoch milliseconds.
	Timestamp int64

	// Body holds the members of the roles that have more: *AssistantFields
	// for assistant, *ToolResultFields for toolResult, *CustomFields for
	// custom, *SummaryFields for compactionSummary and branchSummary. nil
	// for the other roles (their members are in Extra). A body of another
	// role is refused by ValidateWrite.
	Body MessageBody

	Extra  []Field
	Layout Layout
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	c := m
	c.Content = m.Content.Clone()
	if m.Body != nil {
		c.Body = m.Body.clone()
	}
	c.Extra = cloneFields(m.Extra)
	return c
}

// Text concatenates the text blocks of the message content.
func (m *Message) Text() string { return m.Content.Text() }

// Content is a message body: either a plain string (Plain true, one text
// block) or a list of content blocks.
type Content struct {
	Blocks []ContentBlock
	Plain  bool
}

// TextContent returns plain string content.
func TextContent(s string) Content {
	return Content{Blocks: []ContentBlock{{Type: BlockText, Text: s}}, Plain: true}
}

// BlocksContent returns content made of blocks.
func BlocksContent(blocks ...ContentBlock) Content {
	if blocks == nil {
		blocks = []ContentBlock{}
	}
	return Content{Blocks: blocks}
}

// IsZero reports whether the content was never set.
func (c Content) IsZero() bool { return c.Blocks == nil && !c.Plain }

// Text concatenates the text of all text blocks.
func (c Content) Text() string {
	if len(c.Blocks) == 1 {
		return c.Blocks[0].Text
	}
	n := 0
	for _, b := range c.Blocks {
		n += len(b.Text)
	}
	buf := make([]byte, 0, n)
	for _, b := range c.Blocks {
		if b.Type == BlockText {
			buf = append(buf, b.Text...)
		}
	}
	return string(buf)
}

// Paragraphs is the text of the text blocks, each a paragraph of its own
// (joined by a blank line), as a reader sees blocks one after another;
// Text runs them together.
func (c Content) Paragraphs() string {
	if len(c.Blocks) == 1 {
		return c.Blocks[0].Text
	}
	var parts []string
	for _, b := range c.Blocks {
		if b.Type == BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Clone returns a deep copy.
func (c Content) Clone() Content {
	if c.Blocks == nil {
		return c
	}
	out := Content{Plain: c.Plain, Blocks: make([]ContentBlock, len(c.Blocks))}
	for i, b := range c.Blocks {
		if b.Body != nil {
			b.Body = b.Body.clone()
		}
		b.Extra = cloneFields(b.Extra)
		out.Blocks[i] = b
	}
	return out
}

// ContentBlock is one block of message content. A text block's text is
// inline (most blocks are text); each other type's members are in a Body
// of that type, so a block is 88 bytes, not the union of every type's.
type ContentBlock struct {
	Type string
	// Text is a text block's text.
	Text string

	// Body holds the members of the other block types: *ThinkingBlock,
	// *ImageBlock or *ToolCallBlock for theirs; *SignedText for a text
	// block's signature, when it has one; *VerbatimBlock for a content
	// element that is not a JSON object (Type is then ""). nil for other
	// text blocks and for types this version does not know (their
	// members are in Extra). A body of another type than Type is refused
	// by ValidateWrite.
	Body BlockBody

	Extra  []Field
	Layout Layout
}

// Usage is what one model call consumed.
type Usage struct {
	Input       int64
	Output      int64
	CacheRead   int64
	CacheWrite  int64
	TotalTokens int64
	Cost        Cost
	Extra       []Field
	Layout      Layout
}

// Clone returns a deep copy of u (nil for nil).
func (u *Usage) Clone() *Usage {
	if u == nil {
		return nil
	}
	c := *u
	c.Extra = cloneFields(u.Extra)
	c.Cost.Extra = cloneFields(u.Cost.Extra)
	return &c
}

// Tokens is the usage's tokens in all: TotalTokens, or the sum of the
// parts when a writer left TotalTokens out (or it is the smaller).
func (u Usage) Tokens() int64 {
	return max(u.TotalTokens, u.Input+u.Output+u.CacheRead+u.CacheWrite)
}

// Derived reports whether u's total is derived from its parts: its
// writer left TotalTokens out (pi 0.x's usages) or wrote less than the
// parts sum to.
func (u Usage) Derived() bool { return u.TotalTokens < u.Input+u.Output+u.CacheRead+u.CacheWrite }

// Add accumulates o into u (Extra fields are not summed); o's total is
// Tokens(), derived from its parts where it has none.
func (u *Usage) Add(o *Usage) {
	if o == nil {
		return
	}
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.TotalTokens += o.Tokens()
	u.Cost.Input += o.Cost.Input
	u.Cost.Output += o.Cost.Output
	u.Cost.CacheRead += o.Cost.CacheRead
	u.Cost.CacheWrite += o.Cost.CacheWrite
	u.Cost.Total += o.Cost.Total
}

// Cost is the price of a model call in dollars, by token kind.
type Cost struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
	Total      float64
	Extra      []Field
	Layout     Layout
}
