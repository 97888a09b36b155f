// Package stream keeps sessions in a NATS JetStream stream: one subject
// hierarchy per session (<prefix>.<sessionID>.<entryType>), entries as
// msgpack messages, appends guarded by a per-session sequence check so that
// writers on different machines never silently lose, duplicate or
// interleave entries.
package stream
