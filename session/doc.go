// Package session is the pure model of a sessionlog session: entries, the
// session header, the tree they form, and the Session API that appends to a
// Store and builds the model context. It does no I/O, starts no goroutines
// and never reads the wall clock: callers inject a Clock and an IDSource.
//
// # The loop of a session
//
// A session is pi's JSONL version 3: a header, then entries, each naming
// its parent, so that they form a tree; the leaf is the tip of the branch
// being worked on. Every change goes the same way:
//
//  1. the Session makes an entry (AppendMessage, AppendCompaction, SetLabel,
//     MoveTo...), with an id from its IDSource and a time from its Clock,
//     parented on the leaf unless told otherwise;
//  2. the Store checks it against the tree (Tree.Check: fields valid for
//     its type, id unused, parent present) and makes it durable in its own
//     way (memory, a file, a stream);
//  3. the Store applies it to its Tree, which moves the leaf: to the new
//     entry, or for a leaf entry (MoveTo) to the entry it names.
//
// BuildContext then walks from the leaf to the root (Tree.ContextBranch)
// and applies the latest compaction on that path: what it summarized is
// replaced by its summary, the entries it kept follow, and everything after
// it comes as it was (see BuildContext).
//
// # Invariants
//
//   - A tree holds each id once, every entry's parent before it, and one
//     header; entries are never changed once applied (callers share them
//     and must not modify them).
//   - A Store applies only what it has made durable, and only what passed
//     Check against the same tree: a tree read back from any backend is the
//     tree that was written.
//   - Unknown entry types and fields are kept as they came (Raw), so that
//     sessions written by newer pi versions survive a round trip.
//   - A partial tree (NewPartialTree, from a snapshot's skeleton) knows
//     every id, parent, type and label but not every entry's content; what
//     needs content fails with ErrPartial until Complete fills it in.
//
// Backend authors find the tree-keeping store, its writer and the in-memory
// backend in package sessionkit; users of sessions need only this package
// and a backend.
package session
