// Package lifecycle keeps sessions for as long as an operator wants and
// no longer: archives (a session as a gzip-compressed pi file and a
// manifest of its digests, in a directory or an object store, brought
// back identical), retention policies that archive or delete what is past
// them, safely when interrupted, and the digests that prove a session
// came back whole.
//
// It works on any session.Repo: the stream backend, the file store,
// memory.
package lifecycle
