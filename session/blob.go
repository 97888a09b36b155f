package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// BlobRef names content stored apart from its entry ("offloaded"): the
// bytes' SHA-256 and length, and how they stand for the member they
// replace. In an entry it is the JSON object
//
//	{"$blob":"<64 lowercase hex digits>","size":N}                      a JSON value: the bytes are its JSON text
//	{"$blob":"<hex>","size":N,"encoding":"utf8"}                         a string: the bytes are the string
//	{"$blob":"<hex>","size":N,"encoding":"base64"}                       a string: the bytes' standard base64
//
// placed where the member's value was. A JSON value may be replaced in
// any verbatim slot (details, custom data, tool-call arguments, unknown
// members); a string only in the members a reader can restore: the text
// of a text block, the thinking of a thinking block, the data of an image
// block, and plain string content (a message's or a custom_message's).
// An object with a "$blob" member in any of those places is a reference
// and must be well formed; deeper in a value it is ordinary data. A
// reference to content holding redacted secrets says how many
// (,"redactions":N), so that they are counted without the content.
type BlobRef struct {
	SHA256     string
	Size       int64
	Encoding   string // BlobJSON, BlobUTF8 or BlobBase64
	Redactions int
}

// Blob encodings.
const (
	BlobJSON   = ""
	BlobUTF8   = "utf8"
	BlobBase64 = "base64"
)

// maxRefLen bounds the JSON of a reference: longer values are never one,
// so a large member is told apart without being parsed.
const maxRefLen = 160

// NewBlobRef returns the reference of content.
func NewBlobRef(content []byte, encoding string) BlobRef {
	sum := sha256.Sum256(content)
	return BlobRef{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content)), Encoding: encoding}
}

// Raw is the reference's JSON.
func (r BlobRef) Raw() Raw {
	b := make([]byte, 0, 112)
	b = append(b, `{"$blob":"`...)
	b = append(b, r.SHA256...)
	b = append(b, `","size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	if r.Encoding != BlobJSON {
		b = append(b, `,"encoding":"`...)
		b = append(b, r.Encoding...)
		b = append(b, '"')
	}
	if r.Redactions > 0 {
		b = append(b, `,"redactions":`...)
		b = strconv.AppendInt(b, int64(r.Redactions), 10)
	}
	return append(b, '}')
}

// Check reports what is wrong with a reference, or nil.
func (r BlobRef) Check() error {
	if !ValidBlobName(r.SHA256) {
		return fmt.Errorf("$blob %q is not a SHA-256 in 64 lowercase hex digits", clip(r.SHA256))
	}
	if r.Size < 0 || r.Size > MaxBlobSize {
		return fmt.Errorf("size %d is outside 0..%d", r.Size, int64(MaxBlobSize))
	}
	switch r.Encoding {
	case BlobJSON, BlobUTF8, BlobBase64:
	default:
		return fmt.Errorf("encoding %q is not utf8 or base64 (absent: a JSON value)", clip(r.Encoding))
	}
	if r.Redactions < 0 || int64(r.Redactions) > r.Size {
		return fmt.Errorf("redactions %d is outside 0..size", r.Redactions)
	}
	return nil
}

// MaxBlobSize bounds one blob: larger content is refused wherever it
// comes from.
const MaxBlobSize = 1 << 30

// ValidBlobName reports whether s is a SHA-256 in 64 lowercase hex digits,
// the only names blobs have.
func ValidBlobName(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// mayBeRef is the cheap test: only a short object naming "$blob" can be a
// reference.
func mayBeRef(v Raw) bool {
	if len(v) > maxRefLen || len(v) < 10 {
		return false
	}
	v = bytes.TrimLeft(v, " \t\r\n")
	return len(v) > 0 && v[0] == '{' && bytes.Contains(v, []byte(`"$blob"`))
}

// ParseBlobRef reports whether v is a reference (an object with a "$blob"
// member) and returns it. An object with a "$blob" member that is not a
// well-formed reference is an error.
func ParseBlobRef(v Raw) (BlobRef, bool, error) {
	if !mayBeRef(v) {
		return BlobRef{}, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		return BlobRef{}, false, nil
	}
	hexName, ok := m["$blob"]
	if !ok {
		return BlobRef{}, false, nil
	}
	var r BlobRef
	for k, val := range m {
		var err error
		switch k {
		case "$blob":
			err = json.Unmarshal(hexName, &r.SHA256)
		case "size":
			err = json.Unmarshal(val, &r.Size)
		case "encoding":
			err = json.Unmarshal(val, &r.Encoding)
			if err == nil && r.Encoding == BlobJSON {
				err = fmt.Errorf("empty")
			}
		case "redactions":
			err = json.Unmarshal(val, &r.Redactions)
		default:
			err = fmt.Errorf("unknown member")
		}
		if err != nil {
			return BlobRef{}, true, fmt.Errorf("a blob reference has members $blob, size, encoding and redactions: %q is wrong (%v)", k, err)
		}
	}
	if _, ok := m["size"]; !ok {
		return BlobRef{}, true, fmt.Errorf("a blob reference needs its size")
	}
	if err := r.Check(); err != nil {
		return BlobRef{}, true, fmt.Errorf("a blob reference's %v", err)
	}
	return r, true, nil
}

// blobRef is ParseBlobRef for readers of entries that passed validation.
func blobRef(v Raw) (BlobRef, bool) {
	r, ok, err := ParseBlobRef(v)
	return r, ok && err == nil
}

// stringSlot reports whether key of an object of kind (a block type, or
// "message" / "entry") holds a string a reference may stand for.
func stringSlot(kind, key string) bool {
	switch key {
	case "text":
		return kind == BlockText
	case "thinking":
		return kind == BlockThinking
	case "data":
		return kind == BlockImage
	case "content":
		return kind == "message" || kind == "entry"
	}
	return false
}

// HasBlobRef reports whether key of fs holds a reference.
func HasBlobRef(fs []Field, key string) bool {
	for _, f := range fs {
		if f.Key == key {
			_, ok := blobRef(f.Value)
			return ok
		}
	}
	return false
}
