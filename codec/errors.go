package codec

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is returned by the decoders when the input is not a
	// well-formed entry: bad JSON or msgpack, a missing or mistyped id,
	// type or parentId. The wrapping error says where and what.
	ErrMalformed = errors.New("codec: malformed input")

	// ErrInvalid is returned by the encoders when an entry cannot be
	// written faithfully: a Raw field that is not JSON, a NaN cost.
	ErrInvalid = errors.New("codec: invalid entry")
)

// MemberError is returned by DecodeEntryStrict for a member it refuses.
type MemberError struct {
	// Pointer locates the member (RFC 6901), e.g. "/message/role".
	Pointer string
	// Kind is the JSON kind of its value ("a string", "an object").
	Kind string
	// Reason, when set, says what is wrong instead of the default.
	Reason string
}

func (e *MemberError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("codec: %s: %s", e.Pointer, e.Reason)
	}
	return fmt.Sprintf("codec: %s: unknown member, or %s where another kind of value belongs", e.Pointer, e.Kind)
}

// Unwrap makes a MemberError an ErrMalformed.
func (e *MemberError) Unwrap() error { return ErrMalformed }
