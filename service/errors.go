package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/live"
)

// codeOf maps errors to codes, tested in order (a session that is not
// found is also an entry that is not: it comes first). back marks the
// pairs Error.Unwrap maps in return: the session package's sentinels.
var codeOf = []struct {
	code api.Code
	err  error
	back bool
}{
	{api.CodeConflict, session.ErrConflict, true},
	{api.CodeInvalidSessionID, session.ErrInvalidSessionID, true},
	{api.CodeNotFound, session.ErrSessionNotFound, true},
	{api.CodeExists, session.ErrSessionExists, true},
	{api.CodeDuplicateID, session.ErrDuplicateID, true},
	{api.CodeParentNotFound, session.ErrParentNotFound, true},
	{api.CodeInvalidTarget, session.ErrInvalidTarget, true},
	{api.CodeInvalidTarget, session.ErrCycle, false},
	{api.CodeEntryNotFound, session.ErrEntryNotFound, true},
	{api.CodeInvalidEntry, session.ErrInvalidEntry, true},
	{api.CodeInvalidEntry, codec.ErrMalformed, false},
	{api.CodeInvalidEntry, codec.ErrInvalid, false},
	{api.CodeTooLarge, stream.ErrEntryTooLarge, false},
	{api.CodeBlobNotFound, blobs.ErrNotFound, false},
	{api.CodeInvalidEntry, blobs.ErrMismatch, false},
	{api.CodeUploadNotFound, blobs.ErrUploadNotFound, false},
	{api.CodeConflict, blobs.ErrUploadOffset, false},
	{api.CodeNotFound, live.ErrNotFound, false},
	{api.CodeConflict, live.ErrMoved, false},
	{api.CodeTooLarge, live.ErrFull, false},
	{api.CodeTimeout, context.DeadlineExceeded, false},
	{api.CodeUnavailable, context.Canceled, false},
	{api.CodeUnavailable, session.ErrClosed, false},
	// The other closed things a request can meet: this service's cache,
	// and a session re-created under a read that retried once already
	// (asking again opens the new one). Corruption is internal, and says so.
	{api.CodeUnavailable, ErrClosed, false},
	{api.CodeUnavailable, stream.ErrRecreated, false},
	{api.CodeUnavailable, jetstream.ErrNoStreamResponse, false},
	// Never reached by errorOf (invalid_entry matches first): only so
	// that a bad request unwraps as an invalid entry.
	{api.CodeBadRequest, session.ErrInvalidEntry, true},
}

func badRequest(field, format string, args ...any) *api.Error {
	return &api.Error{Code: api.CodeBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// errorOf turns what an operation returned into a protocol error. Only
// errors whose cause is known are explained; the rest are internal.
func errorOf(err error) *api.Error {
	var pe *api.Error
	if errors.As(err, &pe) {
		return pe
	}
	var ce *session.ConflictError
	if errors.As(err, &ce) {
		msg := fmt.Sprintf("the session changed meanwhile: its leaf is now %q", ce.Leaf)
		if ce.Sequence > 0 {
			msg += fmt.Sprintf(", at sequence %d", ce.Sequence)
		}
		return &api.Error{Code: api.CodeConflict, Message: msg, Leaf: ce.Leaf, Sequence: ce.Sequence}
	}
	var te *session.TargetError
	if errors.As(err, &te) && (te.Op == "move" || te.Op == "label") {
		// Both name it with the request's target member.
		return &api.Error{Code: api.CodeInvalidTarget, Field: "/target", Message: fmt.Sprintf("target %q %s", te.ID, te.Reason)}
	}
	var fe *session.FieldError
	if errors.As(err, &fe) && !fe.Header {
		msg := fe.Pointer + " " + fe.Reason
		if fe.Entry != "" {
			msg = fmt.Sprintf("entry %q: %s", fe.Entry, msg)
		}
		return &api.Error{Code: api.CodeInvalidEntry, Message: msg}
	}
	var qe *search.QueryError
	if errors.As(err, &qe) {
		return badRequest("/"+qe.Field, "%s %s", qe.Field, qe.Reason)
	}
	var me *codec.MemberError
	if errors.As(err, &me) {
		return &api.Error{Code: api.CodeInvalidEntry, Message: err.Error(), Field: me.Pointer}
	}
	code := api.CodeInternal
	for _, m := range codeOf {
		if errors.Is(err, m.err) {
			code = m.code
			break
		}
	}
	return &api.Error{Code: code, Message: err.Error()}
}

// decodeRequest unmarshals a request strictly: unknown members, duplicate
// names, wrong kinds and trailing data are refused, naming the member.
func decodeRequest(data []byte, v any) *api.Error {
	if len(data) == 0 {
		data = []byte("{}") // `nats req sessionlog.v1.list ''`
	}
	err := json.Unmarshal(data, v, json.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if errors.As(err, &se) {
		field := string(se.JSONPointer)
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			return badRequest(field, "unknown field %q", se.JSONPointer.LastToken())
		case se.GoType != nil && se.JSONKind != 0:
			return badRequest(field, "field %s must be %s, not %s", fieldName(field), kindOf(se.GoType.Kind().String()), se.JSONKind)
		}
		return badRequest(field, "field %s: %v", fieldName(field), err)
	}
	var xe *jsontext.SyntacticError
	if errors.As(err, &xe) {
		return badRequest(string(xe.JSONPointer), "malformed JSON at byte %d: %v", xe.ByteOffset, xe.Err)
	}
	return badRequest("", "malformed JSON: %v", err)
}

func fieldName(ptr string) string {
	if ptr == "" {
		return "(the request)"
	}
	return ptr
}

func kindOf(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a value of another kind"
	}
	return "a number (" + goKind + ")"
}

// JetStream's codes for storage that is used up: the server's (its disk,
// or its JetStream limit) and an account's (a tenant's max-store).
const (
	jsInsufficientResources = 10023
	jsStorageExceeded       = 10047
)

// storageError is a write refused for want of storage, said as such:
// unavailable, naming what is full and on which node; nil for any other
// error. (Clients read "append to s1: nats: nats: API error: code=503
// err_code=10023 description=insufficient resources", as an internal
// error.)
func storageError(err error, node string, outOfSpace func()) *api.Error {
	var ae *jetstream.APIError
	if !errors.As(err, &ae) {
		return nil
	}
	switch ae.ErrorCode {
	case jsInsufficientResources:
		if outOfSpace != nil {
			outOfSpace()
		}
		return &api.Error{Code: api.CodeUnavailable, Message: fmt.Sprintf("the storage of node %s is full (its disk, or its JetStream limit): writes are refused until space is freed; reads go on", node)}
	case jsStorageExceeded:
		return &api.Error{Code: api.CodeUnavailable, Message: "the tenant's storage limit is reached: writes are refused until sessions are deleted or the limit is raised; reads go on"}
	}
	return nil
}
