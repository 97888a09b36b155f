// Package stream keeps sessions in NATS JetStream streams: one subject per
// session (<prefix>.<sessionID>, or <prefix>.<sessionID>.<entryType> in
// deployments made before that layout), spread over partitions, entries as
// msgpack messages, appends guarded by a per-session sequence check so that
// writers on different machines never silently lose, duplicate or
// interleave entries.
//
// # The loop of a store
//
// A Backend routes each session to the partition holding it (PartitionOf)
// and opens a Store on it. Open reads the session's snapshot (package
// snapshots) and the messages after it, or, without a usable one, every
// message of the session (read.go: direct gets, a batch at a time). The
// tree the store keeps then goes through one loop, for every append:
//
//  1. take the writer's turn (sessionkit.TreeWriter): one append, catch-up
//     or load at a time per store; readers never wait for it. Appends
//     meaning "after whatever is last" queue for it instead (group.go),
//     and the first in the queue sends those waiting behind it too, as
//     one atomic batch when they are enough to pay for one (costs.go):
//     each still answered alone;
//  2. check the entries against the tree (session.Tree.Check), offload
//     large members (package blobs) and encode each as a message whose id
//     is <session>:<epoch>:<entry id>;
//  3. publish with the session's last sequence as the precondition
//     (WithExpectLastSequenceForSubject), resending while the outcome
//     is unknown (jsx.Requester.Resend: the ids make a second copy
//     impossible);
//  4. on "wrong last sequence", another writer came first: read what it
//     wrote (catchup.go), apply it, and follow the ConflictPolicy
//     (ReturnConflict; Rebase onto the new leaf, or Retry, and publish
//     again);
//  5. apply what was stored to the tree under the readers' lock, and let
//     the index (index.go) and the snapshot scheduler hear of it.
//
// # Invariants
//
//   - A session's messages are its history: nothing is rewritten in
//     place. The header is the first message (its sequence is the
//     session's epoch); a session deleted and created again has another
//     epoch, and a store of the old one reports ErrRecreated.
//   - The tree a store holds is always a prefix of the stream's history of
//     the session: the store applies only what the stream acknowledged or
//     what a read returned, in stream order.
//   - Reads may be answered by any replica; a read that must see every
//     acknowledged write (Store.CatchUp, barrier.go) first learns the
//     leader's last sequence: behind a read barrier on a cluster, from the
//     stream itself on a server alone (solo.go).
//   - The index and snapshots only make listing and opening faster: both
//     are rebuilt from the session streams, and a snapshot that fails any
//     check is ignored (snapshots.ErrUnusable), never trusted.
//   - On an edge (edges.go, layout.go) what the node writes, what it takes
//     in from its hub and what it keeps to itself are on different
//     subjects, so nothing it received is ever sent back.
//
// # Locks
//
// A Store's locks are taken in this order: the writer's turn, then the
// tree's lock (sessionkit.TreeStore), held only to apply a change and never
// across a request; the group queue's lock (appendGroup.mu) and keptMu
// are leaf locks, never held while taking another or across a request.
// The Backend's linkMu serializes changes of
// the streams' sources (a link to a hub) and is held across those
// requests only. The packages cut from this one keep the same rule: blobs,
// snapshots and upkeep hold a lock around their caches only.
//
// # Packages
//
// stream keeps the store and the backend; blobs keeps content stored
// apart, snapshots the sessions' snapshots, upkeep the streams' health,
// leaders and replica repair; internal/jsx is the JetStream access they
// share (resent requests, direct gets) and internal/job their one
// background scheduler.
package stream
