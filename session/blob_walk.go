package session

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/segmentio/asm/base64"
)

// slotObj is one object of an entry whose members a reference may stand
// for: the entry, a message (also of a retained tail) or a content block.
type slotObj struct {
	kind  string // block type, "message" or "entry"
	raws  [3]*Raw
	nraw  int
	extra *[]Field
	// str is the string member a utf8/base64 reference may stand for
	// (text, thinking, image data), strKey its name.
	str    *string
	strKey string
	// content is the plain string content of a message or custom_message.
	content *Content
	// members are the object's known members: an Extra field of one of
	// those names is a kept zero or a value of the wrong kind, never
	// offloaded.
	members map[string]byte
}

func (o *slotObj) addRaw(r *Raw) { o.raws[o.nraw] = r; o.nraw++ }

// eachSlotObj calls fn for every object of e that may hold references.
// fn may change the object's slots, and must not keep o: one slotObj
// serves the whole walk (one allocation an entry, where each object was
// one — a fifth of an append's allocations).
func eachSlotObj(e *Entry, fn func(o *slotObj) error) error {
	o := new(slotObj)
	*o = slotObj{kind: "entry", extra: &e.Extra, members: entryMembers[e.Type]}
	var tail []Message
	var content *Content
	switch b := e.Body.(type) {
	case *Compaction:
		o.addRaw(&b.Details)
		tail = b.RetainedTail
	case *BranchSummary:
		o.addRaw(&b.Details)
	case *Custom:
		o.addRaw(&b.Data)
	case *CustomMessage:
		o.addRaw(&b.Details)
		content = &b.Content
		o.content = content
	}
	if err := fn(o); err != nil {
		return err
	}
	if content != nil {
		if err := eachBlockObj(o, content, fn); err != nil {
			return err
		}
	}
	if e.Message != nil {
		if err := eachMessageObj(o, e.Message, fn); err != nil {
			return err
		}
	}
	for i := range tail {
		if err := eachMessageObj(o, &tail[i], fn); err != nil {
			return err
		}
	}
	return nil
}

// eachMessageObj and eachBlockObj walk on with o, the walk's slotObj.
func eachMessageObj(o *slotObj, m *Message, fn func(o *slotObj) error) error {
	*o = slotObj{kind: "message", extra: &m.Extra, content: &m.Content, members: messageMembersOf(m.Role)}
	switch b := m.Body.(type) {
	case *ToolResultFields:
		o.addRaw(&b.Details)
	case *CustomFields:
		o.addRaw(&b.Details)
	}
	if err := fn(o); err != nil {
		return err
	}
	return eachBlockObj(o, &m.Content, fn)
}

func eachBlockObj(o *slotObj, c *Content, fn func(o *slotObj) error) error {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		if b.Verbatim() != nil {
			continue
		}
		*o = slotObj{kind: b.Type, extra: &b.Extra, members: blockMembersOf(b.Type)}
		switch t := b.Body.(type) {
		case nil:
			if b.Type == BlockText {
				o.str, o.strKey = &b.Text, "text"
			}
		case *ToolCallBlock:
			o.addRaw(&t.Arguments)
		case *ThinkingBlock:
			o.str, o.strKey = &t.Thinking, "thinking"
		case *ImageBlock:
			o.str, o.strKey = &t.Data, "data"
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// eachRef calls fn with each reference the object holds, until fn
// returns false; it reports whether fn stopped it.
func (o *slotObj) eachRef(fn func(BlobRef) bool) bool {
	for _, r := range o.raws[:o.nraw] {
		if ref, ok := blobRef(*r); ok && !fn(ref) {
			return true
		}
	}
	for _, f := range *o.extra {
		if ref, ok := blobRef(f.Value); ok && !fn(ref) {
			return true
		}
	}
	return false
}

// BlobRefs returns the references e holds, in order (a blob named twice
// is listed twice).
func (e *Entry) BlobRefs() []BlobRef {
	var out []BlobRef
	_ = eachSlotObj(e, func(o *slotObj) error {
		o.eachRef(func(ref BlobRef) bool { out = append(out, ref); return true })
		return nil
	})
	return out
}

// ResolvedSize is how many bytes the references among refs add once
// resolved: their content, base64 text for base64 references.
func ResolvedSize(refs []BlobRef) int64 {
	var n int64
	for _, r := range refs {
		if r.Encoding == BlobBase64 {
			n += (r.Size + 2) / 3 * 4
		} else {
			n += r.Size
		}
	}
	return n
}

// MessageBlobRefs is BlobRefs of one message.
func MessageBlobRefs(m *Message) []BlobRef {
	e := Entry{Type: TypeMessage, Message: m}
	return e.BlobRefs()
}

// HasBlobs reports whether e holds a reference.
func (e *Entry) HasBlobs() bool {
	return eachSlotObj(e, func(o *slotObj) error {
		if o.eachRef(func(BlobRef) bool { return false }) {
			return errStop
		}
		return nil
	}) == errStop
}

var errStop = fmt.Errorf("stop")

func isRef(v Raw) bool {
	_, ok := blobRef(v)
	return ok
}

// BlobFetch returns the content a reference stands for: the blob's
// bytes, or for a reference of encoding base64 their base64 text (see
// BlobContent). The bytes must never be modified, by the caller or the
// fetcher: resolved entries share them.
type BlobFetch func(ref BlobRef) ([]byte, error)

// BlobContent is what a fetcher returns for ref given the blob's bytes.
func BlobContent(ref BlobRef, blob []byte) []byte {
	if ref.Encoding == BlobBase64 {
		out := make([]byte, base64.StdEncoding.EncodedLen(len(blob)))
		base64.StdEncoding.Encode(out, blob)
		return out
	}
	return blob
}

// ResolveEntry returns e with every reference replaced by the content it
// stands for, fetched through get: a copy when e holds references, e
// itself otherwise.
func ResolveEntry(e *Entry, get BlobFetch) (*Entry, error) {
	if !e.HasBlobs() {
		return e, nil
	}
	c := e.Clone()
	if err := eachSlotObj(c, func(o *slotObj) error { return o.resolve(get) }); err != nil {
		return nil, err
	}
	return c, nil
}

// ResolveMessage is ResolveEntry for one message.
func ResolveMessage(m *Message, get BlobFetch) (*Message, error) {
	e := Entry{Type: TypeMessage, Message: m}
	if !e.HasBlobs() {
		return m, nil
	}
	c := m.Clone()
	if err := eachMessageObj(new(slotObj), &c, func(o *slotObj) error { return o.resolve(get) }); err != nil {
		return nil, err
	}
	return &c, nil
}

func (o *slotObj) resolve(get BlobFetch) error {
	for _, r := range o.raws[:o.nraw] {
		ref, ok := blobRef(*r)
		if !ok {
			continue
		}
		if ref.Encoding != BlobJSON {
			return fmt.Errorf("%w: %s %s reference stands for a JSON value", ErrInvalidEntry, article(ref.Encoding), ref.Encoding)
		}
		b, err := get(ref)
		if err != nil {
			return err
		}
		*r = Raw(b)
	}
	fs := *o.extra
	for i := 0; i < len(fs); i++ {
		ref, ok := blobRef(fs[i].Value)
		if !ok {
			continue
		}
		b, err := get(ref)
		if err != nil {
			return err
		}
		if ref.Encoding == BlobJSON {
			fs[i].Value = Raw(b)
			continue
		}
		var s string
		if len(b) > 0 {
			// The string shares the fetched bytes, which nobody modifies
			// (BlobFetch's contract): an image resolves without a copy.
			s = unsafe.String(&b[0], len(b))
		}
		switch {
		case fs[i].Key == "content" && o.content != nil:
			*o.content = TextContent(s)
		case o.str != nil && fs[i].Key == o.strKey:
			*o.str = s
		default:
			return fmt.Errorf("%w: member %q may not stand for a string", ErrInvalidEntry, fs[i].Key)
		}
		fs = slices.Delete(fs, i, i+1)
		i--
	}
	if len(fs) == 0 {
		fs = nil
	}
	*o.extra = fs
	return nil
}

// BlobPut stores content under ref (NewBlobRef of it) before the entry
// naming it is stored.
type BlobPut func(ref BlobRef, content []byte) error

// OffloadEntry returns e with every member of at least threshold bytes
// replaced by a reference to its content, stored through put first: a
// copy when anything was offloaded, e itself otherwise.
func OffloadEntry(e *Entry, threshold int, put BlobPut) (*Entry, error) {
	if threshold <= 0 || !offloadable(e, threshold) {
		return e, nil
	}
	c := e.Clone()
	if err := eachSlotObj(c, func(o *slotObj) error { return o.offload(threshold, put) }); err != nil {
		return nil, err
	}
	return c, nil
}

// offloadable reports whether offload would store anything of e: the
// offload itself, run without a put (it stops at the first member it
// would store).
func offloadable(e *Entry, threshold int) bool {
	return eachSlotObj(e, func(o *slotObj) error { return o.offload(threshold, nil) }) == errStop
}

// plainText is the length of content written as a plain string, or -1.
func plainText(c Content) int {
	if c.Plain && len(c.Blocks) == 1 && c.Blocks[0].Type == BlockText && len(c.Blocks[0].Extra) == 0 && c.Blocks[0].Body == nil {
		return len(c.Blocks[0].Text)
	}
	return -1
}

// offload stores the object's members of at least threshold bytes
// through put; with put nil it changes nothing and returns errStop at the
// first member it would store.
func (o *slotObj) offload(threshold int, put BlobPut) error {
	store := func(content []byte, enc string) (Raw, error) {
		ref := NewBlobRef(content, enc)
		if enc != BlobBase64 {
			// Redactions stored apart stay counted (CountRedactions).
			ref.Redactions = bytes.Count(content, []byte(redactionPrefix))
		}
		if err := put(ref, content); err != nil {
			return nil, err
		}
		return ref.Raw(), nil
	}
	for _, r := range o.raws[:o.nraw] {
		if len(*r) >= threshold && !isRef(*r) {
			if put == nil {
				return errStop
			}
			ref, err := store(*r, BlobJSON)
			if err != nil {
				return err
			}
			*r = ref
		}
	}
	for i := range *o.extra {
		f := &(*o.extra)[i]
		if _, known := o.members[f.Key]; !known && len(f.Value) >= threshold && !isRef(f.Value) {
			if put == nil {
				return errStop
			}
			ref, err := store(f.Value, BlobJSON)
			if err != nil {
				return err
			}
			f.Value = ref
		}
	}
	if o.str != nil && len(*o.str) >= threshold && !HasBlobRef(*o.extra, o.strKey) {
		if put == nil {
			return errStop
		}
		// Image data in canonical base64 is stored decoded (a quarter
		// smaller); its text is made once per fetch (see BlobContent).
		content, enc := []byte(*o.str), BlobUTF8
		if o.strKey == "data" {
			// Strict decoding refuses all but the canonical encoding,
			// line breaks aside: encoding it again gives the same text.
			if !strings.ContainsAny(*o.str, "\r\n") {
				if b, err := base64.StdEncoding.Strict().DecodeString(*o.str); err == nil {
					content, enc = b, BlobBase64
				}
			}
		}
		ref, err := store(content, enc)
		if err != nil {
			return err
		}
		*o.str = ""
		*o.extra = append(*o.extra, Field{Key: o.strKey, Value: ref})
	}
	if o.content != nil && plainText(*o.content) >= threshold {
		if put == nil {
			return errStop
		}
		ref, err := store([]byte(o.content.Blocks[0].Text), BlobUTF8)
		if err != nil {
			return err
		}
		*o.content = Content{}
		*o.extra = append(*o.extra, Field{Key: "content", Value: ref})
	}
	return nil
}
