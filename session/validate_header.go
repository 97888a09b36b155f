package session

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Bounds of a header's members.
const (
	// MaxPathLen bounds cwd and parentSession.
	MaxPathLen = 4096
	// MaxMetadataLen bounds the free-form metadata object.
	MaxMetadataLen = 64 << 10
)

// ValidateHeader checks a header about to be written: an ISO timestamp,
// paths of at most MaxPathLen bytes, and metadata that is a JSON object
// (strict: no member twice) of at most MaxMetadataLen bytes. The session
// id is the backend's to check (its rules are the backend's).
func ValidateHeader(h *Header) error {
	v := fieldCheck{id: h.ID}
	if _, err := time.Parse(time.RFC3339Nano, h.Timestamp); err != nil {
		v.fail(root.at("timestamp"), fmt.Sprintf("%q is not an ISO-8601 time such as 2025-01-04T00:59:36.639Z", clip(h.Timestamp)))
	}
	for _, f := range [...]struct{ key, s string }{{"cwd", h.Cwd}, {"parentSession", h.ParentSession}} {
		if len(f.s) > MaxPathLen {
			v.fail(root.at(f.key), fmt.Sprintf("is %d bytes (max %d)", len(f.s), MaxPathLen))
		}
	}
	switch {
	case h.Metadata == nil:
	case len(h.Metadata) > MaxMetadataLen:
		v.fail(root.at("metadata"), fmt.Sprintf("is %d bytes (max %d)", len(h.Metadata), MaxMetadataLen))
	case kindByte(h.Metadata) != '{' || !jsontext.Value(h.Metadata).IsValid():
		v.fail(root.at("metadata"), "is not a JSON object (strict: no member twice, valid UTF-8)")
	}
	if fe, ok := v.err.(*FieldError); ok {
		fe.Header = true
	}
	return v.err
}
