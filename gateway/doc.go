// Package gateway serves the sessionlog protocol over HTTP/JSON for
// clients without NATS, with a server-sent-events stream of a session's
// new entries. It is a NATS client like any other: each HTTP user's
// requests travel on a connection made with that user's own credentials
// (HTTP Basic), so the NATS server — not the gateway — decides which
// tenant's sessions they reach.
package gateway
