// Package blobs keeps content stored apart from the entries that name it
// (session.BlobRef: screenshots, large tool results, uploads): one
// JetStream object store per node, each blob an object named by its
// SHA-256, written once however many entries and sessions name it.
//
// The contract, for the stream package that uses it:
//   - An append calls Offload, then EnsureNamed right before it publishes,
//     and sets Header on each message to what EnsureNamed returned; a blob
//     an entry names is then stored for at least the grace period after
//     the publish (see Store for the protocol with collection).
//   - Collect deletes only blobs no entry names, reading every entry
//     through the scan its caller gives; a blob received from another
//     node (an edge's hub, say: see received.go) is kept while that node
//     holds it.
//   - Reads (Get, Resolve, ReadPiece) check what they read against the
//     reference's size and SHA-256: ErrMismatch, never wrong bytes;
//     ErrNotFound for a blob neither this store nor its pair holds.
//   - Uploads stage content sent in pieces until it is whole, an hour at
//     most.
//
// A Store is safe for concurrent use. It holds its mutex only around its
// caches, never across a request.
package blobs
