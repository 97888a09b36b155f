package service

// The protocol and the Go client live in package api, which imports
// neither the server nor its storage; these names keep them reachable
// as service.X for the server and its callers.

import "github.com/agentcore/sessionlog/api"

// Types of the protocol, from package api.
type (
	AppendReply    = api.AppendReply
	AppendRequest  = api.AppendRequest
	Appended       = api.Appended
	BlobDataReply  = api.BlobDataReply
	BlobReply      = api.BlobReply
	BlobRequest    = api.BlobRequest
	Client         = api.Client
	Code           = api.Code
	ContextReply   = api.ContextReply
	ContextRequest = api.ContextRequest
	CreateRequest  = api.CreateRequest
	DeletedReply   = api.DeletedReply
	EntriesReply   = api.EntriesReply
	EntriesRequest = api.EntriesRequest
	Error          = api.Error
	ErrorReply     = api.ErrorReply
	ForkRequest    = api.ForkRequest
	Freshness      = api.Freshness
	GetReply       = api.GetReply
	GetRequest     = api.GetRequest
	LabelReply     = api.LabelReply
	LabelRequest   = api.LabelRequest
	ListReply      = api.ListReply
	ListRequest    = api.ListRequest
	ModelReply     = api.ModelReply
	MoveRequest    = api.MoveRequest
	NameRequest    = api.NameRequest
	PutBlobRequest = api.PutBlobRequest
	LinkRequest    = api.LinkRequest
	LinkReply      = api.LinkReply
	SearchHit      = api.SearchHit
	SearchReply    = api.SearchReply
	SearchRequest  = api.SearchRequest
	SessionReply   = api.SessionReply
	SessionRequest = api.SessionRequest
	StatsReply     = api.StatsReply
	StatsRequest   = api.StatsRequest
	TreeNode       = api.TreeNode
	TreeReply      = api.TreeReply
	TreeRequest    = api.TreeRequest
	UploadReply    = api.UploadReply
	UploadRequest  = api.UploadRequest
	UsageDay       = api.UsageDay
	UsageReply     = api.UsageReply
	WaitReply      = api.WaitReply
	WaitRequest    = api.WaitRequest
)

// Constants of the protocol, from package api.
const (
	CodeBadRequest       = api.CodeBadRequest
	CodeBlobNotFound     = api.CodeBlobNotFound
	CodeConflict         = api.CodeConflict
	CodeDuplicateID      = api.CodeDuplicateID
	CodeEntryNotFound    = api.CodeEntryNotFound
	CodeExists           = api.CodeExists
	CodeInternal         = api.CodeInternal
	CodeInvalidEntry     = api.CodeInvalidEntry
	CodeInvalidSessionID = api.CodeInvalidSessionID
	CodeInvalidTarget    = api.CodeInvalidTarget
	CodeNotFound         = api.CodeNotFound
	CodeParentNotFound   = api.CodeParentNotFound
	CodeRateLimited      = api.CodeRateLimited
	CodeTimeout          = api.CodeTimeout
	CodeTooLarge         = api.CodeTooLarge
	CodeUnavailable      = api.CodeUnavailable
	CodeUploadNotFound   = api.CodeUploadNotFound
	Linearizable         = api.Linearizable
	MaxTimeline          = api.MaxTimeline
	OpAppend             = api.OpAppend
	OpBlob               = api.OpBlob
	OpLink               = api.OpLink
	OpContext            = api.OpContext
	OpCreate             = api.OpCreate
	OpDelete             = api.OpDelete
	OpEntries            = api.OpEntries
	OpFork               = api.OpFork
	OpGet                = api.OpGet
	OpLabel              = api.OpLabel
	OpList               = api.OpList
	OpMove               = api.OpMove
	OpName               = api.OpName
	OpOpen               = api.OpOpen
	OpPutBlob            = api.OpPutBlob
	OpSearch             = api.OpSearch
	OpStats              = api.OpStats
	OpTree               = api.OpTree
	OpUpload             = api.OpUpload
	OpWait               = api.OpWait
	Replica              = api.Replica
)

// Variables and functions of package api.
var (
	Ops            = api.Ops
	NewClient      = api.NewClient
	WithPropagator = api.WithPropagator
)
