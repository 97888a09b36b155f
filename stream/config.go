package stream

import (
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/stream/internal/jsx"

	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config names and shapes the stream sessions live in.
type Config struct {
	// Stream is the stream name (default "SESSIONS").
	Stream string
	// Prefix is the first subject token (default "sessions").
	Prefix string
	// Replicas is the stream's replication factor; 0 lets New choose: 1
	// on a single server, 3 in a cluster, so that no client ever creates
	// an unreplicated stream in a cluster by leaving it out. (1 on one node, 3 in a
	// cluster).
	Replicas int
	// DedupeWindow is how long the server remembers message ids, so that
	// a retried append inside it is recognised without a read. Where
	// nodes sync (edge nodes and their hub source each other's streams),
	// it is also what keeps a message from coming back to the node that
	// sent it: one that comes back later than the window is stored again,
	// a copy readers pass over (EdgeDedupeWindow).
	DedupeWindow time.Duration
	// Index is the key-value bucket listing sessions (default
	// "<Stream>_INDEX").
	Index string
	// RequestTimeout bounds each call (an append, a read) when the
	// caller's context has no deadline. The default outlasts a stream
	// leader's election (nats-server notices a lost leader after 4–9 s),
	// so that a call made during one succeeds rather than fails.
	RequestTimeout time.Duration
	// AttemptTimeout bounds one try of a request that is safe to repeat:
	// an append whose outcome is unknown, or a read, is sent again after
	// it (and at once on "no responders") until the call's deadline. It
	// is how soon a client gives up on a leader that died or stopped,
	// so it bounds how long after an election writes resume; a
	// replicated, fsynced append is acknowledged within milliseconds, and
	// a resend of one still being stored is recognised by its message id.
	AttemptTimeout time.Duration
	// SnapshotEvery makes stores and replicas write a session's snapshot
	// after this many entries since the last one (0: not by count).
	SnapshotEvery int
	// SnapshotOnCompaction also writes one after each compaction.
	SnapshotOnCompaction bool
	// Partitions is how many streams sessions are spread over (see
	// PartitionOf). 0 takes the deployment's count, or 1 when nothing is
	// provisioned yet; a count that differs from the deployment's is
	// refused (ErrPartitions). Fixed once a deployment is provisioned.
	Partitions int

	// OffloadThreshold is the size from which a member of an entry
	// (image data, a content block's text, tool arguments, details,
	// custom data, unknown members) is stored apart, in the
	// deployment's blob store, and the entry holds a reference (see
	// session.BlobRef). 0 stores everything inline.
	OffloadThreshold int
	// Redact, when set, replaces secrets in entries before they are
	// stored (codec.RedactConfig); nil stores entries as written. The
	// deployment's own rules, recorded in its streams by the node that
	// serves it (RecordRedaction), are applied by every backend besides
	// its own: what one writer redacts, all do (redact_record.go).
	Redact *codec.RedactConfig
	// RecordRedaction makes Redact the deployment's rules (nil: none),
	// recorded in its streams for every other writer to follow: the node
	// that serves the deployment sets it (serve), no other writer.
	RecordRedaction bool
	// Origin names the node the store's writes are made on (its
	// JetStream domain, where edge nodes sync): every entry written
	// carries it, and a session written on several nodes while apart
	// takes its leaf by session.Tree's rule for origins. "" names none.
	Origin string
	// Edge provisions a new deployment in the edge layout (an edge node
	// that syncs with a hub: see layout.go). An existing deployment keeps
	// the layout it was made with: one made otherwise is refused
	// (ErrPartitions); a client given none takes the deployment's.
	// Backend.Config says the deployment's.
	Edge bool
	// Sync, on an edge, chooses which sessions made on it go to its hub
	// (see SyncRules). A backend given rules records them in the
	// streams' metadata, so that every writer of the node follows them
	// (serve gives its own, none included); one given nil takes the
	// recorded ones.
	Sync *SyncRules
	// BlobCacheBytes bounds the cache of blobs read back (references are
	// resolved through it).
	BlobCacheBytes int64
	// BlobGrace is how long a blob no entry names is kept before
	// CollectBlobs deletes it. It is recorded in the blob bucket when the
	// deployment is provisioned; clients take the bucket's. It must
	// exceed by far the clock skew between the deployment's machines.
	BlobGrace time.Duration

	// part and total place a partition's config in the layout (set by
	// partition only).
	part, total int
	// typed is the layout of deployments made before a subject per
	// session: a subject per session and entry type (see layout.go). New
	// sets it from the deployment's streams.
	typed bool
	// edge is the edge layout: a subject per session and the node it
	// came from (see layout.go). New sets it from the deployment's
	// streams, or from Edge for a new one.
	edge bool
	// syncRules are the rules in force (Sync, or the recorded ones).
	syncRules SyncRules
}

// DefaultConfig returns the single-node defaults.
func DefaultConfig() Config {
	return Config{
		Stream:         "SESSIONS",
		Prefix:         "sessions",
		Replicas:       0, // chosen from the server: see Replicas
		DedupeWindow:   2 * time.Minute,
		RequestTimeout: 15 * time.Second,
		AttemptTimeout: time.Second,

		SnapshotEvery:        1000,
		SnapshotOnCompaction: true,

		OffloadThreshold: DefaultOffloadThreshold,
		BlobCacheBytes:   64 << 20,
		BlobGrace:        24 * time.Hour,
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case !nameRE.MatchString(c.Stream):
		return fmt.Errorf("%w: stream name %q (letters, digits, '-', '_')", ErrInvalidConfig, c.Stream)
	case !nameRE.MatchString(c.Prefix):
		return fmt.Errorf("%w: subject prefix %q (one token: letters, digits, '-', '_')", ErrInvalidConfig, c.Prefix)
	case c.Replicas < 0 || c.Replicas > 5:
		return fmt.Errorf("%w: replicas %d outside 0..5 (0: chosen from the server)", ErrInvalidConfig, c.Replicas)
	case c.DedupeWindow <= 0:
		return fmt.Errorf("%w: dedupe window must be positive", ErrInvalidConfig)
	case c.Index != "" && !nameRE.MatchString(c.Index):
		return fmt.Errorf("%w: index bucket %q", ErrInvalidConfig, c.Index)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("%w: request timeout must be positive", ErrInvalidConfig)
	case c.AttemptTimeout <= 0 || c.AttemptTimeout > c.RequestTimeout:
		return fmt.Errorf("%w: attempt timeout %v must be positive and at most the request timeout %v", ErrInvalidConfig, c.AttemptTimeout, c.RequestTimeout)
	case c.SnapshotEvery < 0:
		return fmt.Errorf("%w: negative snapshot interval", ErrInvalidConfig)
	case c.OffloadThreshold < 0:
		return fmt.Errorf("%w: offload threshold %d is negative (0: never offload)", ErrInvalidConfig, c.OffloadThreshold)
	case c.BlobCacheBytes < 0:
		return fmt.Errorf("%w: blob cache of %d bytes", ErrInvalidConfig, c.BlobCacheBytes)
	case c.BlobGrace < time.Second:
		return fmt.Errorf("%w: blob grace period %v is under a second", ErrInvalidConfig, c.BlobGrace)
	case c.Partitions < 0 || c.Partitions > MaxPartitions:
		return fmt.Errorf("%w: partitions %d outside 0..%d (0: the deployment's)", ErrInvalidConfig, c.Partitions, MaxPartitions)
	case len(c.Origin) > 64 || strings.ContainsFunc(c.Origin, func(r rune) bool { return r <= ' ' || r > '~' }):
		return fmt.Errorf("%w: origin %q: at most 64 printable ASCII characters, no spaces", ErrInvalidConfig, c.Origin)
	}
	if c.Redact != nil {
		if _, err := c.Redact.Redactor(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// DefaultOffloadThreshold is where storing a member apart starts to pay:
// from here a member stored apart reads back faster than inline, for an
// append that takes somewhat longer (BENCHMARKS.md, Heavy sessions, has
// the measurements).
const DefaultOffloadThreshold = 128 << 10

// SnapshotBucket names the object store of snapshots (its KV of heads is
// SnapshotBucket()+"_HEADS").
func (c Config) SnapshotBucket() string { return c.Stream + "_SNAPSHOTS" }

// IndexBucket names the KV bucket of the session index.
func (c Config) IndexBucket() string {
	if c.Index != "" {
		return c.Index
	}
	return c.Stream + "_INDEX"
}

// indexStream names the stream behind the index bucket.
func (c Config) indexStream() string { return "KV_" + c.IndexBucket() }

var typeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// sessionSubjects is the filter of every message of session id.
func (c Config) sessionSubjects(id string) string {
	switch {
	case c.typed:
		return c.Prefix + "." + id + ".>"
	case c.edge:
		return c.Prefix + "." + id + ".*"
	}
	return c.Prefix + "." + id
}

// EdgeDedupeWindow is an edge node's duplicate window. What an edge
// wrote comes back to it from the hub (see layout.go): within the window
// it is recognised and dropped; later, it is stored once more, a copy
// every reader passes over. A day covers a day away (an edge writes
// little: the server keeps about 100 bytes a message for it).
const EdgeDedupeWindow = 24 * time.Hour

// sessionsFilter matches every session's messages of the partition and
// nothing else (not its read barriers).
func (c Config) sessionsFilter() string {
	if c.typed || c.edge {
		return c.Prefix + ".*.*"
	}
	return c.Prefix + ".*"
}

// subject is where this node publishes an entry of type typ of session
// id.
func (c Config) subject(id, typ string) string {
	switch {
	case c.typed:
		return c.Prefix + "." + id + "." + typ
	case c.edge:
		return c.Prefix + "." + id + "." + writtenHere
	}
	return c.Prefix + "." + id
}

// localSubject is where an edge publishes the messages of session id
// when the session is kept on the machine (WithKeepLocal).
func (c Config) localSubject(id string) string { return c.Prefix + "." + id + "." + keptHere }

// headerSubject is where this node publishes session id's header (with a
// subject per session, its first message).
func (c Config) headerSubject(id string) string { return c.subject(id, "session") }

// isHeaderSubject reports whether a message on subject can be session
// id's header: on its header subject, or with a subject per session (and
// node), the session's first message.
func (c Config) isHeaderSubject(subject, id string) bool {
	if c.typed {
		return subject == c.headerSubject(id)
	}
	sid, _, ok := c.sessionOf(subject)
	return ok && sid == id
}

// sessionOf returns the session id of a subject of this stream, and the
// entry type the subject names (none with a subject per session).
func (c Config) sessionOf(subject string) (id, typ string, ok bool) {
	rest, ok := strings.CutPrefix(subject, c.Prefix+".")
	if !ok {
		return "", "", false
	}
	switch {
	case c.edge:
		id, from, ok := strings.Cut(rest, ".")
		return id, "", ok && id != "" && (from == writtenHere || from == fromHub || from == keptHere)
	case !c.typed:
		return rest, "", rest != "" && !strings.Contains(rest, ".")
	}
	id, typ, ok = strings.Cut(rest, ".")
	return id, typ, ok
}

// provision creates the stream and the index bucket, or checks that
// existing ones can hold sessions safely. An incompatible stream is
// reported with ErrIncompatibleStream and never changed.
func provision(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, jetstream.KeyValue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = replicasFor(js.Conn())
	}
	want := jetstream.StreamConfig{
		Name:               cfg.Stream,
		Description:        "sessionlog sessions",
		Subjects:           []string{cfg.Prefix + ".>"},
		Storage:            jetstream.FileStorage,
		Retention:          jetstream.LimitsPolicy,
		Replicas:           cfg.Replicas,
		Duplicates:         cfg.DedupeWindow,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxMsgsPerSubject:  -1,
		Discard:            jetstream.DiscardNew,
		AllowAtomicPublish: true,
		AllowDirect:        true,
		DenyDelete:         true,
		Metadata:           cfg.streamMetadata(),
	}
	var s jetstream.Stream
	err := Provisioning(ctx, func(ctx context.Context) (err error) {
		// Look before creating: clients whose credentials may read but
		// not create streams (tenant users) use an existing one.
		if s, err = js.Stream(ctx, cfg.Stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		s, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = js.Stream(ctx, cfg.Stream)
		}
		return err
	})
	if err == nil {
		err = checkCompatible(s.CachedInfo().Config, cfg)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("stream: provision %s: %w", cfg.Stream, err)
	}
	kv, err := jsx.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.IndexBucket(),
		Description: "sessionlog session index",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		History:     1,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("stream: provision index %s: %w", cfg.IndexBucket(), err)
	}
	return s, kv, nil
}

// BlobBucket names the deployment's object store of blobs.
func (c Config) BlobBucket() string { return c.Stream + "_BLOBS" }

// LocalBlobBucket names an edge's object store of the blobs it keeps on
// the machine: those of sessions kept local (WithKeepLocal), and those
// put before an entry names them (BlobsForPuts). A blob goes into the
// store that syncs only when an entry of a session that syncs names it.
func (c Config) LocalBlobBucket() string { return c.Stream + "_BLOBS_LOCAL" }

// Provisioning runs step until it succeeds, fails for good, or ctx ends:
// errors a cluster gives while it elects leaders (no response, no
// peers, JetStream not ready) are retried. Callers provisioning streams
// of their own use it too.
func Provisioning(ctx context.Context, step func(ctx context.Context) error) error {
	return jsx.Provisioning(ctx, step)
}

// checkCompatible lists every setting of an existing stream that would
// make it lose, refuse or misfile entries.
func checkCompatible(got jetstream.StreamConfig, cfg Config) error {
	bad := checkLayout(got, cfg)
	if !slices.Contains(got.Subjects, cfg.Prefix+".>") {
		bad = append(bad, fmt.Sprintf("subjects %v do not include %s.>", got.Subjects, cfg.Prefix))
	}
	if got.Retention != jetstream.LimitsPolicy {
		bad = append(bad, fmt.Sprintf("retention %v deletes messages once consumed", got.Retention))
	}
	if got.MaxAge > 0 || got.MaxMsgs > 0 || got.MaxBytes > 0 || got.MaxMsgsPerSubject > 0 {
		bad = append(bad, "limits (max age, msgs, bytes or msgs per subject) would expire entries")
	}
	if got.Storage != jetstream.FileStorage {
		bad = append(bad, "memory storage does not survive a restart")
	}
	if !got.AllowAtomicPublish {
		bad = append(bad, "atomic batch publish is not allowed")
	}
	if got.DenyPurge {
		bad = append(bad, "purge is denied, so sessions cannot be deleted")
	}
	if got.Duplicates <= 0 {
		bad = append(bad, "no duplicate window")
	}
	if got.Sealed {
		bad = append(bad, "the stream is sealed")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrIncompatibleStream, got.Name, strings.Join(bad, "; "))
	}
	return nil
}

// replicasFor is the replication a stream should have on nc's
// deployment: 1 on a single server, 3 in a cluster. (Counting the servers
// a connection knows is no guide: a new connection may not have learnt
// the others yet, and would have made an R1 stream in a cluster. In a
// cluster of two, creating the stream fails saying so: give Replicas.)
//
// A server linked to a hub as a leafnode without a cluster of its own (an
// edge node) names its cluster after itself: that is a single server too.
func replicasFor(nc *nats.Conn) int {
	if nc == nil || nc.ConnectedClusterName() == "" || nc.ConnectedClusterName() == nc.ConnectedServerName() {
		return 1
	}
	return 3
}
