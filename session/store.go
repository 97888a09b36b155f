package session

import (
	"context"
)

// Store keeps the entries of one session. Implementations:
// sessionkit.TreeStore (memory, and the base of the file and JetStream
// stores), filestore.Store, stream.Store. All methods are safe for concurrent use.
//
// Entries returned are shared with the store and must not be modified;
// slices returned are the caller's own. Every method returns ErrClosed
// after Close.
type Store interface {
	// Header returns the session header.
	Header(ctx context.Context) (Header, error)
	// Leaf returns the current leaf id ("" before the first entry). The
	// leaf is set by appending: an entry becomes the leaf, and a TypeLeaf
	// entry moves it to the entry it names, so every move is persisted.
	Leaf(ctx context.Context) (string, error)
	// Append stores e after checking it (Tree.Check): ErrInvalidEntry,
	// ErrDuplicateID, ErrParentNotFound, a *TargetError for a label of a
	// missing entry, or a store error. On error nothing is stored. The
	// store keeps e: the caller must not modify it afterwards.
	Append(ctx context.Context, e *Entry) error
	// Get returns the entry with the given id, or ErrEntryNotFound.
	Get(ctx context.Context, id string) (*Entry, error)
	// FindByType returns the entries of one type in append order.
	FindByType(ctx context.Context, t EntryType) ([]*Entry, error)
	// Label returns the label on an entry ("" if none).
	Label(ctx context.Context, id string) (string, error)
	// SessionName returns the session's name ("" if unnamed).
	SessionName(ctx context.Context) (string, error)
	// PathToRoot returns the entries from id up to the root, id first, or
	// ErrEntryNotFound. An empty id gives an empty path.
	PathToRoot(ctx context.Context, id string) ([]*Entry, error)
	// Entries returns every entry in append order.
	Entries(ctx context.Context) ([]*Entry, error)
	// Stats returns statistics over every entry of the session.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store. It is idempotent.
	Close(ctx context.Context) error
}

// BatchAppender is implemented by stores that append several entries
// atomically: all are stored or none is.
type BatchAppender interface {
	AppendBatch(ctx context.Context, entries []*Entry) error
}

// IDChecker is implemented by stores that can tell whether an id is used
// without loading the entry (Session uses it when making new ids).
type IDChecker interface {
	Has(ctx context.Context, id string) (bool, error)
}

// BlobHolder is implemented by stores whose entries may hold references
// to content stored apart (see BlobRef). Their reads return entries with
// the content in place; Refs is the same store read as stored
// (references kept). Session builds contexts from Refs and resolves only
// what the context holds: ResolveMessages replaces each message holding
// references by a resolved copy (each blob read once, however often the
// messages name it), ResolveEntry resolves one entry.
type BlobHolder interface {
	Refs() Store
	ResolveMessages(ctx context.Context, msgs []*Message) error
	ResolveEntry(ctx context.Context, e *Entry) (*Entry, error)
}

// ContextBrancher is implemented by stores that give the entries the
// context of a branch needs (Tree.ContextBranch) without the whole
// branch: a store opened from a snapshot reads only those. Session uses
// it when no transform is configured (transforms see the branch they are
// given).
type ContextBrancher interface {
	ContextBranch(ctx context.Context, leaf string) ([]*Entry, error)
}

// TreeHolder is implemented by stores that keep a materialised Tree; Session
// uses it to build views without copying entries. fn runs under the store's
// read lock and must not keep t.
type TreeHolder interface {
	ReadTree(ctx context.Context, fn func(t *Tree) error) error
}
