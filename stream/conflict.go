package stream

import "github.com/agentcore/sessionlog/session"

// Conflict handling is decided here and only here: what an append does
// when another writer appended to the session since this store last saw
// it. Who gets what (the table of conflict policies in docs/concepts.md is this one):
//
//	library Store.Append/AppendBatch   the backend's policy: ReturnConflict,
//	                                   or what WithConflictPolicy set
//	CLI verbs                          Rebase (WithConflictPolicy)
//	service: entries without a parent  OptionsFor(AfterLeaf): Rebase, FollowLeaf
//	service: entries with a parent     OptionsFor(ParentChosen): Retry
//	service: label, name               OptionsFor(AfterLeaf)
//	service: move                      OptionsFor(ParentChosen): it names its target
//	any append with IfSequence         the conflict is returned
//	any move (leaf entry) under Rebase Retry (decide)
//
// The last two rows hold for every append, whoever chose the policy.

// ConflictPolicy says what Append does when another writer appended to the
// session since this store last saw it.
type ConflictPolicy int

const (
	// ReturnConflict catches up and returns a *session.ConflictError
	// carrying the new leaf; nothing is written.
	ReturnConflict ConflictPolicy = iota
	// Rebase catches up and, when the refused entries were meant for the
	// leaf, re-parents the first onto the new leaf and retries.
	Rebase
	// Retry catches up and retries the entries as they are, with the
	// parents they name: for appends whose parent was chosen on purpose,
	// which another writer's entries do not invalidate.
	Retry
)

// AppendOptions shape one AppendWith call.
type AppendOptions struct {
	// Policy is the conflict policy of this call.
	Policy ConflictPolicy
	// FollowLeaf puts the first entry onto the leaf as it is when the
	// entries are stored (under the store's lock), whatever parent it was
	// given: for callers that share one store and mean "after whatever is
	// last". With Rebase it also follows other writers' appends.
	FollowLeaf bool
	// IfSequence, when non-zero, makes the append conditional: it is
	// stored only while the session's last stream sequence is IfSequence,
	// whatever Policy says; otherwise a *session.ConflictError reports
	// where the session is now.
	IfSequence uint64
	// storedAt, when set, is given the session's last sequence once the
	// entries are stored (a Pipeline's next expectation).
	storedAt *uint64
}

// Intent says what an append means, which decides its conflict handling.
type Intent int

const (
	// AfterLeaf entries mean "after whatever is last": they go onto the
	// leaf as it is when they are stored and are re-parented onto another
	// writer's entries (Rebase with FollowLeaf).
	AfterLeaf Intent = iota + 1
	// ParentChosen entries name their parent (or target) on purpose:
	// another writer's entries do not change what they mean, so they are
	// retried as they are (Retry); what no longer fits is refused.
	ParentChosen
)

// OptionsFor is the AppendOptions of an append with this intent; a
// non-zero ifSequence makes it conditional (a conflict is returned).
func OptionsFor(in Intent, ifSequence uint64) AppendOptions {
	if in == AfterLeaf {
		return AppendOptions{Policy: Rebase, FollowLeaf: true, IfSequence: ifSequence}
	}
	return AppendOptions{Policy: Retry, IfSequence: ifSequence}
}

// decide is the policy an append gets: the caller's, except that a move
// (a leaf entry first) is never rebased — re-parenting it would change
// what it means — so Rebase becomes Retry for it. (A conditional append,
// IfSequence set, returns its conflict whatever the policy: see
// appendWith.)
func decide(opts AppendOptions, entries []*session.Entry) AppendOptions {
	if opts.Policy == Rebase && len(entries) > 0 && entries[0] != nil && entries[0].Type == session.TypeLeaf {
		opts.Policy, opts.FollowLeaf = Retry, false
	}
	return opts
}
