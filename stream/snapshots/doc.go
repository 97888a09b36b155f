// Package snapshots keeps each session's snapshot: its skeleton (ids,
// parents, types, labels, name, stats: a few bytes per entry), its body
// (the session as pi JSONL lines, in segments that later snapshots keep),
// and for a long session whose leaf's context is a small part of it, a
// tip (that branch alone). A head record in a key-value bucket names the
// current snapshot and the one before.
//
// The contract, for the stream package that uses it:
//   - A snapshot is never changed in place: each is new objects, and the
//     head moves to it by a conditional update, so a reader on the one
//     before keeps its objects; older ones are deleted after.
//   - Save never makes a session's head go back: a snapshot no newer than
//     the current one (same epoch, sequence not past it) is dropped.
//   - What Load returns was checked: object digests, the skeleton's
//     metadata, and that the session's header is still at the snapshot's
//     epoch (Config.CheckEpoch). Anything else is ErrUnusable, and the
//     caller reads the session from the stream instead: a snapshot only
//     ever makes an open faster, never different.
//   - Body and EntriesAt read entries lazily; each chunk is checked
//     against the sum the skeleton holds for it.
//
// A Store is safe for concurrent use; its memos' lock is never held
// across a request. A Scheduler owns one goroutine (started on its first
// due session); Close waits for it.
package snapshots
