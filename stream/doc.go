// Package stream keeps sessions in NATS JetStream streams: one subject per
// session (<prefix>.<sessionID>, or <prefix>.<sessionID>.<entryType> in
// deployments made before that layout), spread over partitions, entries as
// msgpack messages, appends guarded by a per-session sequence check so that
// writers on different machines never silently lose, duplicate or
// interleave entries.
package stream
