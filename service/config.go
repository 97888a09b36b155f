package service

// The service's configuration: its limits and what it is started with.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/usage"
)

// Limits bound what one request may ask.
type Limits struct {
	// MaxRequestBytes bounds a request body (the server's max payload
	// bounds it too).
	MaxRequestBytes int
	// MaxEntryBytes bounds one entry's JSON. Entries larger than a
	// request come as an upload (AppendRequest.Upload); their large
	// members are stored apart (stream.Config.OffloadThreshold).
	MaxEntryBytes int
	// MaxUploadBytes bounds one upload: a blob, or an append request
	// staged in pieces.
	MaxUploadBytes int
	// MaxStagedBytes bounds the staged appends held in memory at once
	// (each is read whole to be decoded); more wait their turn.
	MaxStagedBytes int64
	// MaxEntries bounds the entries of one append.
	MaxEntries int
	// MaxPage bounds list and entries page sizes.
	MaxPage int
	// Rate and Burst bound the requests per second of one client (one
	// NATS connection, told apart by its reply inbox); TenantRate and
	// TenantBurst bound them for all clients of the service together, so
	// a client changing inboxes cannot escape its limit.
	Rate, TenantRate   float64
	Burst, TenantBurst int
	// TenantWriteBytes bounds the bytes per second the tenant's appends,
	// uploads and blobs bring, TenantWriteBurst how many may come at
	// once: past them a write is refused rate_limited with when to retry.
	// How fast a tenant can grow what the node holds, and how much of its
	// disk and CPU one tenant's writes can take.
	TenantWriteBytes float64
	TenantWriteBurst int
}

// Config configures a Service.
type Config struct {
	// Logger hears what fails where no request can be told: a session
	// closed out of the cache whose index record could not be written.
	// Nil: slog.Default().
	Logger *slog.Logger
	// Name and Version are announced by micro ($SRV.INFO).
	Name    string
	Version string
	// Subject is the prefix of the operations: <Subject>.<op>.
	Subject string
	// QueueGroup spreads requests over the service instances (one per
	// node); every instance serves every request.
	QueueGroup string
	// Tenant names whose sessions these are (announced in metadata).
	Tenant string
	// Prices prices model calls in a session's stats (nil:
	// usage.Default()); the index's usage takes the same.
	Prices *usage.Table
	// ReplyPrefixes are where replies may go: a request whose reply
	// subject starts with none of them (a stored subject, the index, the
	// service's own subjects, none at all) is dropped unanswered and
	// unprocessed. Every NATS client library replies on "_INBOX." by
	// default; a client with a custom inbox prefix needs it added here.
	ReplyPrefixes []string
	Limits        Limits
	// MaxOpenSessions bounds the sessions kept open between requests;
	// one unused for CacheIdle is closed.
	MaxOpenSessions int
	CacheIdle       time.Duration
	// MaxCachedBytes bounds the memory of the sessions kept open between
	// requests (their entries, as session.Tree.Bytes estimates it): past
	// it the least recently used are closed, however few that leaves; a
	// session is held whatever its size while a request uses it.
	MaxCachedBytes int64
	// MaxInFlight bounds the requests handled at once; further requests
	// wait in the connection's buffer. MaxWaits bounds the waits in
	// flight, which do not count towards MaxInFlight, and
	// MaxWaitsPerClient those of one client (one connection); further
	// waits are refused (rate_limited).
	MaxInFlight       int
	MaxWaits          int
	MaxWaitsPerClient int
	// MaxConsumersPerUser bounds the JetStream consumers each client user
	// may create on the service's streams (0: no bound; see quota.go).
	// Owners are the users not counted — the node's own connections
	// (cluster.Node.TenantOwners) — and without them there is no bound:
	// a node without tenants cannot tell its clients apart.
	MaxConsumersPerUser int
	// MaxLiveConsumersPerUser bounds, apart, the consumers each client
	// user has on the generations' stream: a reader of a generation holds
	// one while it reads, and its writer one to hear of a stop. 0: no
	// bound.
	MaxLiveConsumersPerUser int
	Owners                  []string
	// Ready, when set, is asked before each request: while it returns an
	// error (a node cut off from the rest of its cluster) every request is
	// answered "unavailable" at once, naming it, so that clients go to
	// another node instead of waiting on one that cannot commit, and so
	// that such a node piles up no writes it will have to discard.
	Ready func() error
	// RequestTimeout bounds one request's work; MaxWait bounds a wait.
	RequestTimeout time.Duration
	MaxWait        time.Duration
	// Session gives the clock and id source for entries the service
	// completes; SessionIDs draws the ids of sessions created without one.
	Session    session.Config
	SessionIDs session.IDSource
	// Search answers the search operation from this node's index of the
	// tenant's sessions; nil answers it unavailable. MaxSearches bounds
	// the searches run at once (one over a large index can take a core for
	// a second): more are refused, rate_limited, rather than queued.
	Search      Searcher
	MaxSearches int
	// AcceptLinks serves OpLink: edge nodes linked to this node (serve
	// -leaf-listen) have their sessions streams sourced into the tenant's,
	// those of EdgeDomains (the tenant's edges) and no other.
	AcceptLinks bool
	EdgeDomains []string
	// Domain is this node's JetStream domain, which linked edges source
	// the tenant's sessions from.
	Domain string
	// Node, when set, tells how the node is (OpNode): what its operator
	// sees in status beyond the streams' health.
	Node func() api.NodeReply
	// OutOfSpace, when set, hears of each write the node's storage
	// refused for want of space (cluster.Node.NoteOutOfSpace).
	OutOfSpace func()
}

// Searcher is the full-text index the search operation asks (a
// *search.Index kept current by a search.Indexer). Forget drops a deleted
// session at once; Search drops hits of sessions exists says are gone.
type Searcher interface {
	Search(ctx context.Context, q search.Query, exists search.Exists) (search.Result, error)
	Forget(ctx context.Context, session string) error
}

// SessionUsager is a Searcher that tells one session's usage as its usage
// report counts it (a *search.Index): listings then give the same tokens
// and cost.
type SessionUsager interface {
	SessionUsage(id string) (api.UsageSums, bool)
}

// UsageReporter is a Searcher that also keeps usage across sessions (a
// *search.Index does), which answers the usage operation.
type UsageReporter interface {
	Usage(ctx context.Context, req api.UsageRequest) (api.UsageReport, error)
}

// DefaultConfig serves sessionlog.v1.
func DefaultConfig(sc session.Config) Config {
	return Config{
		Name: "sessionlog", Version: "1.0.0", Subject: api.DefaultSubject, QueueGroup: "sessionlog",
		Limits: Limits{
			MaxRequestBytes: 1 << 20, MaxEntryBytes: 64 << 20, MaxUploadBytes: 64 << 20, MaxStagedBytes: 256 << 20,
			MaxEntries: 100, MaxPage: session.MaxPageSize,
			Rate: 200, Burst: 400, TenantRate: 2000, TenantBurst: 4000,
			TenantWriteBytes: 8 << 20, TenantWriteBurst: 64 << 20,
		},
		ReplyPrefixes:   []string{"_INBOX."},
		MaxOpenSessions: 256, CacheIdle: time.Minute, MaxCachedBytes: 256 << 20, MaxInFlight: 64, MaxWaits: 256, MaxWaitsPerClient: 32, MaxConsumersPerUser: 64, MaxLiveConsumersPerUser: 256, MaxSearches: 4,
		RequestTimeout: 20 * time.Second, MaxWait: 30 * time.Second,
		Session: sc, SessionIDs: session.IDFunc(system.SessionID),
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	l := c.Limits
	switch {
	case c.Name == "" || c.Version == "":
		return fmt.Errorf("%w: Name and Version are required", ErrInvalidConfig)
	case c.Subject == "" || strings.ContainsAny(c.Subject, "*> \t"):
		return fmt.Errorf("%w: Subject %q must be a plain subject", ErrInvalidConfig, c.Subject)
	case l.MaxRequestBytes < 1024 || l.MaxEntryBytes < 1024:
		return fmt.Errorf("%w: MaxRequestBytes and MaxEntryBytes must be at least 1 KiB", ErrInvalidConfig)
	case l.MaxUploadBytes < l.MaxEntryBytes || int64(l.MaxUploadBytes) > l.MaxStagedBytes:
		return fmt.Errorf("%w: MaxUploadBytes must hold an entry (MaxEntryBytes) and fit in MaxStagedBytes", ErrInvalidConfig)
	case l.MaxEntries < 1 || l.MaxEntries > stream.MaxBatch:
		return fmt.Errorf("%w: MaxEntries must be 1–%d", ErrInvalidConfig, stream.MaxBatch)
	case l.MaxPage < 1 || l.MaxPage > session.MaxPageSize:
		return fmt.Errorf("%w: MaxPage must be 1–%d", ErrInvalidConfig, session.MaxPageSize)
	case l.Rate <= 0 || l.TenantRate <= 0 || l.Burst < 1 || l.TenantBurst < 1:
		return fmt.Errorf("%w: rates and bursts must be positive", ErrInvalidConfig)
	case l.TenantWriteBytes <= 0 || l.TenantWriteBurst < l.MaxRequestBytes:
		return fmt.Errorf("%w: TenantWriteBytes must be positive and TenantWriteBurst hold a request (MaxRequestBytes)", ErrInvalidConfig)
	case c.MaxConsumersPerUser < 0 || c.MaxLiveConsumersPerUser < 0:
		return fmt.Errorf("%w: MaxConsumersPerUser and MaxLiveConsumersPerUser must not be negative", ErrInvalidConfig)
	case c.Search != nil && c.MaxSearches < 1:
		return fmt.Errorf("%w: MaxSearches must be positive with a Search index", ErrInvalidConfig)
	case c.MaxOpenSessions < 1 || c.MaxInFlight < 1 || c.MaxWaits < 1 || c.MaxWaitsPerClient < 1:
		return fmt.Errorf("%w: MaxOpenSessions, MaxInFlight, MaxWaits and MaxWaitsPerClient must be positive", ErrInvalidConfig)
	case c.MaxCachedBytes < 1<<20:
		return fmt.Errorf("%w: MaxCachedBytes must be at least 1 MiB", ErrInvalidConfig)
	case c.RequestTimeout <= 0 || c.MaxWait <= 0 || c.CacheIdle <= 0:
		return fmt.Errorf("%w: RequestTimeout, MaxWait and CacheIdle must be positive", ErrInvalidConfig)
	case c.SessionIDs == nil:
		return fmt.Errorf("%w: no SessionIDs", ErrInvalidConfig)
	case len(c.ReplyPrefixes) == 0:
		return fmt.Errorf("%w: no ReplyPrefixes: no request could be answered", ErrInvalidConfig)
	}
	for _, p := range c.ReplyPrefixes {
		if !strings.HasSuffix(p, ".") || len(p) < 2 || strings.ContainsAny(p, "*> \t") {
			return fmt.Errorf("%w: reply prefix %q must be subject tokens ending in '.' (such as _INBOX.)", ErrInvalidConfig, p)
		}
	}
	return c.Session.Validate()
}
