package api

import (
	"errors"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// DefaultSubject is the prefix the service's operations are served on
// unless configured otherwise (service.Config.Subject).
const DefaultSubject = "sessionlog.v1"

// The operations, each served on <Config.Subject>.<op> (sessionlog.v1.append).
const (
	OpCreate  = "create"
	OpOpen    = "open"
	OpAppend  = "append"
	OpMove    = "move"
	OpLabel   = "label"
	OpName    = "name"
	OpContext = "context"
	OpTree    = "tree"
	OpEntries = "entries"
	OpGet     = "get"
	OpStats   = "stats"
	OpFork    = "fork"
	OpList    = "list"
	OpDelete  = "delete"
	OpWait    = "wait"
	OpSearch  = "search"
	// OpUsage sums tokens and cost across sessions (see UsageRequest).
	OpUsage = "usage"
	// Blobs: content stored apart from entries (see session.BlobRef).
	OpUpload  = "upload"
	OpPutBlob = "putblob"
	OpBlob    = "blob"
	// OpLink is an edge node's, over its leafnode link: the hub's
	// sessions stream sources the edge's (see LinkRequest). Only nodes
	// that accept edges (serve -leaf-listen) serve it.
	OpLink = "link"
)

// Ops lists every operation.
var Ops = []string{OpCreate, OpOpen, OpAppend, OpMove, OpLabel, OpName, OpContext, OpTree, OpEntries, OpGet, OpStats, OpFork, OpList, OpDelete, OpWait,
	OpSearch, OpUsage, OpUpload, OpPutBlob, OpBlob, OpLiveStart, OpLivePut, OpLiveEnd, OpLiveStop, OpLiveState}

// CreateRequest creates a session. ID is drawn at random when empty.
type CreateRequest struct {
	ID            string         `json:"id,omitempty"`
	Cwd           string         `json:"cwd,omitempty"`
	ParentSession string         `json:"parentSession,omitempty"`
	Name          string         `json:"name,omitempty"`
	Metadata      jsontext.Value `json:"metadata,omitempty"`
}

// SessionRequest names a session (open, tree, stats, delete). Reads are
// linearizable: they see every append acknowledged before they started.
type SessionRequest struct {
	Session   string `json:"session"`
	Freshness `json:",inline"`
}

// AppendRequest appends entries (pi v3 JSON) as one atomic batch. id,
// parentId and timestamp may be left out: ids are drawn, timestamps come
// from the server's clock, and each entry's parent is the previous one —
// the first's is Parent when given ("" for a new root), else the leaf.
//
// Conflicts: with IfSequence the batch is stored only if the session's last
// sequence is still IfSequence (else code "conflict" with the leaf and
// sequence now). Without it, a batch chained onto the leaf follows the leaf
// if another writer moved it, and a batch with chosen parents is stored
// under them.
type AppendRequest struct {
	Session    string           `json:"session"`
	Entries    []jsontext.Value `json:"entries"`
	Parent     *string          `json:"parent,omitempty"`
	IfSequence uint64           `json:"ifSequence,omitzero"`
	// Upload, instead of the other members, names an upload (see
	// UploadRequest) holding this request's JSON: an append larger than
	// a request, up to Limits.MaxUploadBytes.
	Upload string `json:"upload,omitempty"`
}

// UploadRequest stages one piece of an upload, the way content larger
// than a request travels: pieces sent in order (Offset: the bytes sent
// before; 0 begins the upload, or begins it again), then the upload is
// named by a putblob or an append. Upload is the client's id for it (a
// session id's characters); pieces are kept an hour.
type UploadRequest struct {
	Upload string `json:"upload"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"` // base64 in JSON
}

// UploadReply says how many bytes the upload holds.
type UploadReply struct {
	Upload string `json:"upload"`
	Size   int64  `json:"size"`
}

// PutBlobRequest stores a blob: Data, or the content of Upload. SHA256,
// when given, must be the content's.
type PutBlobRequest struct {
	Data   []byte `json:"data,omitempty"`
	Upload string `json:"upload,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// BlobReply is the reference to a stored blob, to place in an entry
// where the content would be: as it is for a JSON value, with
// "encoding":"utf8" for a string, "encoding":"base64" for image data.
type BlobReply struct {
	Blob jsontext.Value `json:"blob"`
}

// BlobRequest reads blob SHA256 from Offset on, a piece at a time: a
// reply holds what fits; Cursor, from the previous reply, resumes there
// cheaply.
type BlobRequest struct {
	SHA256 string `json:"sha256"`
	Offset int64  `json:"offset,omitzero"`
	Cursor uint64 `json:"cursor,omitzero"`
}

// BlobDataReply is a piece of a blob. Next is the offset of the following
// piece (with Cursor to pass), absent after the last.
type BlobDataReply struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
	Next   int64  `json:"next,omitzero"`
	Cursor uint64 `json:"cursor,omitzero"`
}

// MoveRequest moves the leaf to Target ("" to before the first entry),
// optionally leaving a branch summary of the branch left behind.
type MoveRequest struct {
	Session    string         `json:"session"`
	Target     string         `json:"target"`
	Summary    string         `json:"summary,omitempty"`
	Details    jsontext.Value `json:"details,omitempty"`
	FromHook   bool           `json:"fromHook,omitzero"`
	IfSequence uint64         `json:"ifSequence,omitzero"`
}

// LabelRequest sets (or with "" clears) the label of an entry.
type LabelRequest struct {
	Session    string `json:"session"`
	Target     string `json:"target"`
	Label      string `json:"label"`
	IfSequence uint64 `json:"ifSequence,omitzero"`
}

// NameRequest names a session.
type NameRequest struct {
	Session    string `json:"session"`
	Name       string `json:"name"`
	IfSequence uint64 `json:"ifSequence,omitzero"`
}

// ContextRequest builds the context of the leaf, or of the branch ending
// at At.
type ContextRequest struct {
	Session string `json:"session"`
	At      string `json:"at,omitempty"`
	// Offset is the first message to return: a context larger than one
	// reply comes in pages (ContextReply.Next).
	Offset int `json:"offset,omitzero"`
	// Refs keeps references to content stored apart (see
	// session.BlobRef) instead of the content.
	Refs      bool `json:"refs,omitzero"`
	Freshness `json:",inline"`
}

// TreeRequest asks for a session's tree, from node Offset on.
type TreeRequest struct {
	Session   string `json:"session"`
	Offset    int    `json:"offset,omitzero"`
	Freshness `json:",inline"`
}

// EntriesRequest pages through a session's entries in append order.
type EntriesRequest struct {
	Session string `json:"session"`
	Offset  int    `json:"offset,omitzero"`
	Limit   int    `json:"limit,omitzero"`
	// Refs: as in ContextRequest.
	Refs      bool `json:"refs,omitzero"`
	Freshness `json:",inline"`
}

// ForkRequest copies a branch of Session into a new session (ID, or a
// random id): the leaf's branch, the branch ending At an entry, or the
// branch before the user message Before.
type ForkRequest struct {
	Session string `json:"session"`
	ID      string `json:"id,omitempty"`
	At      string `json:"at,omitempty"`
	Before  string `json:"before,omitempty"`
}

// ListRequest pages a listing, most recently updated first.
//
// The filters keep only the sessions that match all that are given (see
// session.Filter): a name containing Name (any case), a working directory
// at or under Cwd, every one of Labels, metadata members equal to Meta's,
// and updated at or after Since and before Until (RFC 3339). A filtered
// page may hold fewer than Limit sessions, none even, and still have a
// Next: follow it until it is empty.
type ListRequest struct {
	Limit  int               `json:"limit,omitzero"`
	Cursor string            `json:"cursor,omitempty"`
	Name   string            `json:"name,omitempty"`
	Cwd    string            `json:"cwd,omitempty"`
	Labels []string          `json:"labels,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
	Since  string            `json:"since,omitempty"`
	Until  string            `json:"until,omitempty"`
}

// Filter is the session.Filter of the request; a field that cannot be
// used is a bad_request naming it.
func (r ListRequest) Filter() (*session.Filter, error) {
	f := &session.Filter{Name: r.Name, Cwd: r.Cwd, Labels: r.Labels, Meta: r.Meta}
	for _, t := range []struct {
		field, v string
		to       *time.Time
	}{{"/since", r.Since, &f.Since}, {"/until", r.Until, &f.Until}} {
		if t.v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.v)
		if err != nil {
			return nil, badRequest(t.field, "%q is not an RFC 3339 time (2025-01-31T12:00:00Z)", t.v)
		}
		*t.to = at
	}
	var fe *session.FilterError
	if err := f.Validate(); errors.As(err, &fe) {
		field := map[string]string{"label": "/labels", "since": "/since"}[fe.Field]
		if field == "" {
			field = "/" + fe.Field
		}
		return nil, badRequest(field, "%s %s", fe.Field, fe.Reason)
	} else if err != nil {
		return nil, err
	}
	if f.IsZero() {
		return nil, nil
	}
	return f, nil
}

// WaitRequest waits until the session reflects every message up to stream
// sequence Sequence (what an append returned, here or on any node), for at
// most TimeoutMs (default and cap: Config.MaxWait).
type WaitRequest struct {
	Session   string `json:"session"`
	Sequence  uint64 `json:"sequence"`
	TimeoutMs int64  `json:"timeoutMs,omitzero"`
}

// SessionReply describes a session (create, open, fork, delete).
type SessionReply struct {
	Session  session.Listing `json:"session"`
	Header   jsontext.Value  `json:"header,omitempty"`
	Labels   []LabelReply    `json:"labels,omitempty"`
	Sequence uint64          `json:"sequence,omitzero"`
	Copied   int             `json:"copied,omitzero"` // fork
	// Deleted is what a delete removed.
	Deleted *DeletedReply `json:"deleted,omitempty"`
}

// DeletedReply is what deleting a session removed (stream.DeleteReport):
// its messages, snapshot objects, the blobs only it named; blobs another
// session names too are kept, and blobs written or named within the grace
// period are left to collection, which removes them once it has passed.
type DeletedReply struct {
	Messages     int `json:"messages"`
	Snapshots    int `json:"snapshots"`
	BlobsDeleted int `json:"blobsDeleted"`
	BlobsShared  int `json:"blobsShared"`
	BlobsYoung   int `json:"blobsYoung"`
}

// LabelReply is a label in force.
type LabelReply struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Timestamp string `json:"timestamp"`
}

// AppendReply reports what an append (or move, label, name) stored: the
// entries' ids and final parents, the leaf, and the stream sequence to
// wait for elsewhere.
type AppendReply struct {
	Entries  []Appended `json:"entries"`
	Leaf     string     `json:"leaf"`
	Sequence uint64     `json:"sequence"`
}

// Appended is one stored entry.
type Appended struct {
	ID       string `json:"id"`
	ParentID string `json:"parentId"`
}

// ContextReply is the model context: messages exactly as pi feeds them.
type ContextReply struct {
	ThinkingLevel string         `json:"thinkingLevel"`
	Model         *ModelReply    `json:"model"`
	ActiveTools   []string       `json:"activeTools,omitempty"`
	Compaction    string         `json:"compaction,omitempty"`
	Messages      jsontext.Value `json:"messages"`
	Sources       []string       `json:"sources"`
	Leaf          string         `json:"leaf"`
	Sequence      uint64         `json:"sequence"`
	// Apart are the branches other nodes wrote while apart that this
	// context (of the leaf) leaves out (TreeReply.Apart).
	Apart []Apart `json:"apart,omitempty"`
	// Total is the number of messages of the whole context; Offset is
	// where this page starts and Next where the following one does (0:
	// this is the last page). Pages of one context belong together only
	// if their Sequence is the same.
	Total  int `json:"total"`
	Offset int `json:"offset,omitzero"`
	Next   int `json:"next,omitzero"`
}

// ModelReply is the model in force.
type ModelReply struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// TreeReply is the tree, flat, in append order.
type TreeReply struct {
	Leaf     string     `json:"leaf"`
	Sequence uint64     `json:"sequence"`
	Nodes    []TreeNode `json:"nodes"`
	// Total is the number of nodes; Next, when not 0, the offset of the
	// next page (a tree larger than one reply).
	Total int `json:"total"`
	Next  int `json:"next,omitzero"`
	// Apart are the branches written on other nodes while apart (edge
	// nodes) that the current branch does not hold, latest first.
	Apart []Apart `json:"apart,omitempty"`
}

// TreeNode is one entry of the tree.
type TreeNode struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentId,omitempty"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Role      string `json:"role,omitempty"`
	Label     string `json:"label,omitempty"`
	Target    string `json:"target,omitempty"` // leaf moves and labels
	// What the entry says, for outlines (package outline): one line of
	// its text (control and bidirectional characters replaced), a custom
	// entry's type, an assistant's tool calls or the tool a result
	// answers, whether it thought, whether a tool failed.
	Summary    string   `json:"summary,omitempty"`
	CustomType string   `json:"customType,omitempty"`
	Tools      []string `json:"tools,omitempty"`
	// Calls are an assistant's tool calls as its agent shows them, with
	// what each acted on (Read(src/App.tsx), Bash(npm test)), in Tools'
	// order; Turn names the API message the entry is part of (Claude Code
	// writes one line per block of a message).
	Calls    []string `json:"calls,omitempty"`
	Turn     string   `json:"turn,omitempty"`
	Thinking bool     `json:"thinking,omitzero"`
	Error    bool     `json:"error,omitzero"`
	// The conversation outline of the whole tree (package outline): Row is
	// the row the entry is shown in (rows in the outline's order); Head
	// marks the row's own entry, with the row's Depth and whether it
	// starts a Branch; the others are paired with it (tool results, the
	// rest of a turn) or bookkeeping folded into it.
	Row    int  `json:"row"`
	Head   bool `json:"head,omitzero"`
	Depth  int  `json:"depth,omitzero"`
	Branch bool `json:"branch,omitzero"`
}

// GetRequest asks for one entry of a session by its id; Refs: as in
// ContextRequest.
type GetRequest struct {
	Session   string `json:"session"`
	Entry     string `json:"entry"`
	Refs      bool   `json:"refs,omitzero"`
	Freshness `json:",inline"`
}

// GetReply is one entry (pi v3 JSON), as of Sequence.
type GetReply struct {
	Entry    jsontext.Value `json:"entry"`
	Sequence uint64         `json:"sequence"`
}

// EntriesReply is a page of entries (pi v3 JSON). Next is the offset of
// the following page, 0 after the last.
type EntriesReply struct {
	Entries  []jsontext.Value `json:"entries"`
	Total    int              `json:"total"`
	Next     int              `json:"next,omitzero"`
	Sequence uint64           `json:"sequence"`
}

// StatsRequest asks for a session's statistics; Timeline adds its tokens
// and cost by day and model (it reads every entry: a large session's
// timeline costs what reading it does).
type StatsRequest struct {
	Session   string `json:"session"`
	Timeline  bool   `json:"timeline,omitzero"`
	Freshness `json:",inline"`
}

// UsageDay is what one model's replies cost on one day (UTC).
type UsageDay struct {
	Day     string  `json:"day"`
	Model   string  `json:"model"` // provider/model
	Replies int     `json:"replies"`
	Input   int64   `json:"input"`
	Output  int64   `json:"output"`
	Cost    float64 `json:"cost"`
	// Calls counts the calls outside the conversation; CacheRead,
	// CacheWrite and Tokens are as in UsageSums, and so are the calls
	// without a price, left out of Cost.
	Calls          int64 `json:"calls,omitzero"`
	CacheRead      int64 `json:"cacheRead,omitzero"`
	CacheWrite     int64 `json:"cacheWrite,omitzero"`
	Tokens         int64 `json:"tokens,omitzero"`
	UnpricedCalls  int64 `json:"unpricedCalls,omitzero"`
	UnpricedTokens int64 `json:"unpricedTokens,omitzero"`
}

// UsageDayOf is a timeline's row of a day and model's sums.
func UsageDayOf(day, model string, s UsageSums) UsageDay {
	return UsageDay{Day: day, Model: model, Replies: int(s.Turns), Input: s.Input, Output: s.Output, Cost: s.Cost, Calls: s.Calls,
		CacheRead: s.CacheRead, CacheWrite: s.CacheWrite, Tokens: s.Tokens, UnpricedCalls: s.UnpricedCalls, UnpricedTokens: s.UnpricedTokens}
}

// MaxTimeline bounds the rows of a timeline.
const MaxTimeline = 1000

// StatsReply counts a session's messages, tokens and cost.
type StatsReply struct {
	Entries         int            `json:"entries"`
	ByType          map[string]int `json:"byType"`
	Messages        int            `json:"messages"`
	ByRole          map[string]int `json:"byRole"`
	ToolCalls       int            `json:"toolCalls"`
	Compactions     int            `json:"compactions"`
	BranchSummaries int            `json:"branchSummaries"`
	// Redactions counts secrets replaced on write.
	Redactions int        `json:"redactions"`
	Usage      UsageReply `json:"usage"`
	Sequence   uint64     `json:"sequence"`
	// Timeline, when asked for: by day, then model; at most MaxTimeline
	// rows, TimelineCut saying more were left out.
	Timeline    []UsageDay `json:"timeline,omitempty"`
	TimelineCut bool       `json:"timelineCut,omitzero"`
}

// UsageReply sums tokens and cost.
//
// Each API call is counted once (Claude Code repeats a message's usage on
// each of its lines), as the usage operation counts it: Turns are the
// assistant replies, Calls the model calls outside the conversation;
// Cost leaves out the calls of a model without a price, which
// UnpricedCalls counts (their tokens UnpricedTokens): the cost is then
// only known in part.
type UsageReply struct {
	Input          int64   `json:"input"`
	Output         int64   `json:"output"`
	CacheRead      int64   `json:"cacheRead"`
	CacheWrite     int64   `json:"cacheWrite"`
	TotalTokens    int64   `json:"totalTokens"`
	Cost           float64 `json:"cost"`
	Turns          int64   `json:"turns"`
	Calls          int64   `json:"calls"`
	UnpricedCalls  int64   `json:"unpricedCalls,omitzero"`
	UnpricedTokens int64   `json:"unpricedTokens,omitzero"`
}

// UsageReplyOf is a session's sums as a stats reply gives them.
func UsageReplyOf(s UsageSums) UsageReply {
	return UsageReply{Input: s.Input, Output: s.Output, CacheRead: s.CacheRead, CacheWrite: s.CacheWrite, TotalTokens: s.Tokens,
		Cost: s.Cost, Turns: s.Turns, Calls: s.Calls, UnpricedCalls: s.UnpricedCalls, UnpricedTokens: s.UnpricedTokens}
}

// ListReply is a page of sessions; Next is the cursor of the following
// page, "" after the last.
type ListReply struct {
	Sessions []session.Listing `json:"sessions"`
	Next     string            `json:"next,omitempty"`
}

// WaitReply says where the session is once it reflects the sequence.
type WaitReply struct {
	Leaf     string `json:"leaf"`
	Sequence uint64 `json:"sequence"`
}

// ErrorReply is the body of every error reply; the same code is in the
// Nats-Service-Error-Code header.
type ErrorReply struct {
	Error *Error `json:"error"`
}
