package service

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/agentcore/sessionlog/api"
)

// What a client is told of an error, and what only the node's log is.
//
// A known cause is told as it is, without the server's package names
// (PublicMessage). An error whose text is the server's own workings — a
// cause no check named (internal), or one carrying transport or
// JetStream text (addresses, "connection reset", "API error:
// code=503 err_code=10077") — is told as its code's public message and
// a request id; the node logs the cause under that id. Clients once read
// "blobs: not found: <sha>", "live: full: nats: nats: API error: …" and
// "write tcp 127.0.0.1:38322->…: connection reset by peer".

// internalPrefix is a Go package's prefix on an error's text (session:,
// stream: …, and the client library's nats:): it names the server's
// code, which a client neither sees nor can act on.
var internalPrefix = regexp.MustCompile(`(?m)(^|: |\()(session|stream|codec|service|lifecycle|search|filestore|cluster|replica|transcript|follow|gateway|blobs|live|upkeep|snapshots|tracker|host|usage|outline|tenants|mcpserver|nats|jetstream): `)

// serverText is text of the server's workings a client is never shown.
var serverText = regexp.MustCompile(`(?i)\b(tcp|udp|unix) [^ ]*\d+\.\d+\.\d+\.\d+|\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d+|\[[0-9a-f:]+\]:\d+|connection reset|broken pipe|i/o timeout|err_code=|API error|no responders|slow consumer|goroutine|\.go:\d+`)

// publicMessages are what a client is told of a code whose cause the
// node keeps to its log.
var publicMessages = map[api.Code]string{
	api.CodeInternal:    "the node failed to answer this request",
	api.CodeUnavailable: "the node cannot serve this request now; try again, or another node",
	api.CodeTimeout:     "no answer in time (the outcome is unknown; a request with its ids may be sent again)",
}

// PublicMessage is an error's text as a client reads it: without the
// package prefixes the server's errors carry.
func PublicMessage(msg string) string { return internalPrefix.ReplaceAllString(msg, "$1") }

// Public is e as a client may be told it, given its cause: e itself,
// without package names, or — for an internal error, or text of the
// server's workings — its code's public message and a request id under
// which log records cause. Every error a client is sent goes through it
// (the service's replies, the gateway's); op names the request.
func Public(e *api.Error, cause error, log *slog.Logger, op string) *api.Error {
	c := *e
	if c.Request != "" {
		return &c // made public already (the service's, relayed by the gateway)
	}
	c.Message = PublicMessage(e.Message)
	if c.Code != api.CodeInternal && !serverText.MatchString(c.Message) {
		return &c
	}
	generic, ok := publicMessages[c.Code]
	if !ok {
		// A known code (blob_not_found, too_large) with server text: the
		// code says what happened.
		generic = fmt.Sprintf("%s (the node's log has the details)", c.Code)
	}
	c.Request = newRequestID()
	c.Message = fmt.Sprintf("%s (request %s in the node's log)", generic, c.Request)
	if cause == nil {
		cause = e
	}
	if log == nil {
		log = slog.Default()
	}
	log.Error("sessionlog: request failed", "request", c.Request, "op", op, "code", string(e.Code), "error", cause.Error())
	return &c
}

// newRequestID names one failed request in the node's log.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
