// Package sessionkit is what a backend author needs beside package
// session, as database/sql/driver stands beside database/sql: TreeStore,
// a session.Store over an in-memory session.Tree; TreeWriter, the one
// writer's turn of a store whose backend persists entries its own way;
// WriteAhead and Deferred, the hooks of persistence and of a tree loaded
// late (from a snapshot's stand-in); and NewMemoryStore, the in-memory
// backend built with them.
//
// The contract a backend keeps with TreeStore: writes take turns (one
// writer at a time, waiting honours ctx); a writer reads the tree without
// the lock while it is its turn, makes its entries durable, and only then
// applies them under the readers' lock through Commit, doing no I/O
// there. Readers never wait for a writer's I/O. Close waits for a write in
// flight (while ctx allows) and is idempotent.
package sessionkit
