package api

import (
	"fmt"

	"github.com/agentcore/sessionlog/session"
)

// Code is a protocol error code: clients switch on it. It is carried in the
// reply body ({"error":{"code":…}}) and in the Nats-Service-Error-Code
// header.
type Code string

// The error codes.
const (
	// CodeBadRequest: malformed JSON, an unknown field, a value of the
	// wrong type or out of range; Field names it.
	CodeBadRequest Code = "bad_request"
	// CodeInvalidSessionID: a session id that is not 1–128 letters,
	// digits, '-' or '_'.
	CodeInvalidSessionID Code = "invalid_session_id"
	// CodeInvalidEntry: an entry that is not a valid entry of its type.
	CodeInvalidEntry Code = "invalid_entry"
	// CodeNotFound: no such session.
	CodeNotFound Code = "not_found"
	// CodeEntryNotFound: no such entry in the session.
	CodeEntryNotFound Code = "entry_not_found"
	// CodeExists: a session of that id exists already.
	CodeExists Code = "exists"
	// CodeDuplicateID: an entry id already used in the session.
	CodeDuplicateID Code = "duplicate_id"
	// CodeParentNotFound: an entry's parent is not in the session.
	CodeParentNotFound Code = "parent_not_found"
	// CodeInvalidTarget: a move, label or fork target that cannot be one.
	CodeInvalidTarget Code = "invalid_target"
	// CodeConflict: the session moved on (IfSequence did not hold, or a
	// concurrent writer won); Leaf and Sequence say where it is now.
	CodeConflict Code = "conflict"
	// CodeTooLarge: a request, an entry or a batch over the limits.
	CodeTooLarge Code = "too_large"
	// CodeBlobNotFound: a reference to a blob the deployment does not
	// hold (upload it first), or a read of one.
	CodeBlobNotFound Code = "blob_not_found"
	// CodeUploadNotFound: an upload with no piece (expired or never
	// begun).
	CodeUploadNotFound Code = "upload_not_found"
	// CodeRateLimited: too many requests; retry after RetryAfterMs.
	CodeRateLimited Code = "rate_limited"
	// CodeTimeout: a wait that ran out, or a request the server could not
	// finish in time (an append may then be stored: retry it as it was —
	// same ids — and it is stored once).
	CodeTimeout Code = "timeout"
	// CodeUnavailable: the service is stopping or the stream cannot be
	// reached.
	CodeUnavailable Code = "unavailable"
	// CodeInternal: anything else.
	CodeInternal Code = "internal"
	// CodeUnauthorized: the HTTP gateway's, for credentials missing or
	// refused (HTTP 401; over NATS the server refuses the connection).
	CodeUnauthorized Code = "unauthorized"
)

// Codes lists every error code, the one list the clients' errors and
// docs/protocol.md are checked against.
var Codes = []Code{CodeBadRequest, CodeInvalidSessionID, CodeInvalidEntry, CodeNotFound,
	CodeEntryNotFound, CodeExists, CodeDuplicateID, CodeParentNotFound, CodeInvalidTarget,
	CodeConflict, CodeTooLarge, CodeBlobNotFound, CodeUploadNotFound, CodeRateLimited,
	CodeTimeout, CodeUnavailable, CodeInternal, CodeUnauthorized}

// Error is a protocol error.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Field is the request member at fault (a JSON pointer such as
	// /entries/2/message/role), for bad_request, invalid_entry, too_large.
	Field string `json:"field,omitempty"`
	// Leaf and Sequence are where the session is now, for conflict.
	Leaf     string `json:"leaf,omitempty"`
	Sequence uint64 `json:"sequence,omitzero"`
	// RetryAfterMs is when to try again, for rate_limited.
	RetryAfterMs int64 `json:"retryAfterMs,omitzero"`
	// Request names the request in the node's log, for an error whose
	// cause the node keeps there (internal; transport or JetStream text).
	Request string `json:"request,omitempty"`
}

func (e *Error) Error() string {
	msg := "sessionlog: " + string(e.Code) + ": " + e.Message
	if e.Field != "" {
		msg += " (at " + e.Field + ")"
	}
	return msg
}

// Unwrap maps the code back to the session package's sentinel, so Go
// callers of a Client test errors as they would against a local store.
func (e *Error) Unwrap() error { return sentinels[e.Code] }

// sentinels are the session package's errors each code stands for.
var sentinels = map[Code]error{
	CodeConflict:         session.ErrConflict,
	CodeInvalidSessionID: session.ErrInvalidSessionID,
	CodeNotFound:         session.ErrSessionNotFound,
	CodeExists:           session.ErrSessionExists,
	CodeDuplicateID:      session.ErrDuplicateID,
	CodeParentNotFound:   session.ErrParentNotFound,
	CodeInvalidTarget:    session.ErrInvalidTarget,
	CodeEntryNotFound:    session.ErrEntryNotFound,
	CodeInvalidEntry:     session.ErrInvalidEntry,
	// A request the server could not read holds an entry it could not.
	CodeBadRequest: session.ErrInvalidEntry,
}

// badRequest is a bad_request error about field.
func badRequest(field, format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}
