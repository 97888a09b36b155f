// Package codec turns session entries into bytes and back: JSON lines in
// the pi coding agent's v3 session format, and msgpack for the wire. Both
// round-trip every field, including entry types and members this version
// does not know. The package does no I/O.
package codec
