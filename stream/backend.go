package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
	"github.com/agentcore/sessionlog/stream/live"
	"github.com/agentcore/sessionlog/stream/snapshots"
	"github.com/agentcore/sessionlog/stream/upkeep"
	"github.com/agentcore/sessionlog/telemetry"
)

// Backend is the repository of sessions in the layout's streams: it
// creates, opens, lists, deletes and forks them. With P > 1 partitions it
// routes each session to the partition holding it (a Backend of its own,
// sharing the connection) and lists across them; with one, it is that
// partition.
type Backend struct {
	nc *nats.Conn
	js jetstream.JetStream
	// rq sends the partition's requests (see jsx.Requester).
	rq *jsx.Requester
	// linkMu serializes SourceFrom's changes of the streams' configs
	// (replaced whole: two at once would lose one).
	linkMu sync.Mutex
	cfg    Config
	stream jetstream.Stream
	kv     jetstream.KeyValue
	snaps  *snapshots.Store // the partition's
	blobs  *blobs.Store     // the deployment's, shared by its partitions
	// localBlobs, on an edge, are the blobs kept on the machine (see
	// Config.LocalBlobBucket).
	localBlobs *blobs.Store
	// redactor, when the config asks for one, redacts entries on write.
	redactor *codec.Redactor
	policy   ConflictPolicy
	tel      *telemetry.T
	// warnings are New's findings for a human (see Warnings).
	warnings []string
	moves    *jsx.Moves
	// balancer keeps partition leaders spread (WithLeaderBalancing).
	balancer *upkeep.Balancer
	barriers atomic.Uint64 // read barriers written, for their purges
	// costs are what sends have cost, learnt by publish: when waiting
	// entries are worth an atomic batch.
	costs sendCosts
	// balanceEvery, when set, starts the balancer (WithLeaderBalancing).
	balanceEvery time.Duration
	// followIndex starts the index follower (WithIndexFollower).
	followIndex   bool
	indexFollower *indexFollower
	// repairCfg, when set, starts the repairer (WithReplicaRepair).
	repairCfg *upkeep.RepairConfig
	repairer  *upkeep.Repairer
	// publishHook, set by tests only, replaces publishMsg's publish.
	publishHook func(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
	// batchHook, set by tests only, replaces the publish of an atomic
	// batch.
	batchHook func(ctx context.Context, msgs []*nats.Msg) (uint64, error)
	// sendHook, set by tests only, is given each attempt to send an
	// append's messages, to make (or not) when it likes.
	sendHook func(msgs []*nats.Msg, send func() error) error
	// barrierGroup shares read barriers between concurrent reads.
	barrierGroup barrierGroup
	// soloCheck remembers whether the stream is on the connected server
	// alone, when fresh reads need no barrier (solo.go); noSolo, set by
	// tests only, makes every fresh read take the barrier.
	soloCheck soloCheck
	noSolo    bool
	// electionSub hears the partition's elections, which interrupt its
	// requests in flight (see jsx.Requester).
	electionSub *nats.Subscription
	// pendingIndex holds the partition's index records not written yet.
	pendingIndex pendingIndex

	closed atomic.Bool // Close was called: the backend no longer lists
	// listReads counts the index records listings read (tests compare it
	// with the page).
	listReads atomic.Uint64

	// parts are the partitions, in order; with one partition, parts[0]
	// is the Backend itself, whose cfg is then also its partition's.
	parts []*Backend
}

var _ session.Repo = (*Backend)(nil)

// Option configures New.
type Option func(*Backend)

// WithConflictPolicy sets the policy of the stores the backend opens.
func WithConflictPolicy(p ConflictPolicy) Option { return func(b *Backend) { b.policy = p } }

// WithLeaderBalancing keeps the partitions' leaders spread over the
// cluster's servers (see BalanceLeaders): at start and after every
// leader election of a partition, at most once per interval. A node
// that serves the deployment sets it; clients need not.
func WithLeaderBalancing(interval time.Duration) Option {
	return func(b *Backend) { b.balanceEvery = interval }
}

// WithTelemetry sets the tracer and meter (default: the global providers,
// which record nothing until a program installs an SDK).
func WithTelemetry(t *telemetry.T) Option { return func(b *Backend) { b.tel = t } }

// Telemetry returns the backend's instruments (replicas and services on
// the backend use them too).
func (b *Backend) Telemetry() *telemetry.T { return b.tel }

// New provisions (or checks) the stream and index on nc and returns the
// repository.
func New(ctx context.Context, nc *nats.Conn, cfg Config, opts ...Option) (_ *Backend, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	// What the deployment calls for, asked of the connection once: the
	// replicas a new stream gets, and the bound an existing one is held to.
	want := replicasFor(nc)
	if cfg.Replicas == 0 {
		cfg.Replicas = want
	}
	b := &Backend{nc: nc, js: js, cfg: cfg, moves: jsx.WatchMoves(nc), rq: newRequester(nc, js, cfg)}
	defer func() {
		if err != nil {
			for _, p := range b.parts {
				if p.electionSub != nil {
					_ = p.electionSub.Unsubscribe()
				}
			}
			b.moves.Stop()
		}
	}()
	for _, o := range opts {
		o(b)
	}
	if b.tel == nil {
		b.tel = telemetry.Default()
	}
	// Creating replicated streams in a new cluster takes elections: give
	// provisioning a few request timeouts.
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 6*cfg.RequestTimeout)
		defer cancel()
	}
	if cfg, err = resolveLayout(ctx, js, cfg); err != nil {
		return nil, err
	}
	b.cfg = cfg
	if cfg.Partitions == 1 {
		b.cfg = cfg.partition(0)
		b.parts = []*Backend{b}
	} else {
		for i := range cfg.Partitions {
			p := &Backend{nc: nc, js: js, rq: newRequester(nc, js, cfg), cfg: cfg.partition(i), moves: b.moves, policy: b.policy, tel: b.tel}
			p.parts = []*Backend{p}
			b.parts = append(b.parts, p)
		}
	}
	// The partitions are provisioned at once: each is four replicated
	// assets, and in a cluster each asset is an election.
	if err := b.eachPart(func(_ int, p *Backend) error { return p.provision(ctx, want) }); err != nil {
		return nil, err
	}
	for _, p := range b.parts {
		if p != b {
			b.warnings = append(b.warnings, p.warnings...)
		}
	}
	if err := b.settleNode(ctx); err != nil {
		return nil, err
	}
	if err := b.settleRedaction(ctx); err != nil {
		return nil, err
	}
	bcfg := blobs.Config{Bucket: b.cfg.BlobBucket(), Replicas: b.cfg.Replicas, Grace: b.cfg.BlobGrace, CacheBytes: b.cfg.BlobCacheBytes}
	shared, err := blobs.Open(ctx, b.parts[0].rq, b.tel, bcfg)
	if err != nil {
		return nil, err
	}
	b.blobs = shared
	var local *blobs.Store
	if b.cfg.edge {
		bcfg.Bucket = b.cfg.LocalBlobBucket()
		if local, err = blobs.Open(ctx, b.parts[0].rq, b.tel, bcfg); err != nil {
			return nil, err
		}
		blobs.Pair(shared, local)
	}
	if b.cfg.Redact != nil {
		if b.redactor, err = b.cfg.Redact.Redactor(); err != nil {
			return nil, err
		}
	}
	for _, p := range b.parts {
		p.redactor = b.redactor
		p.blobs, p.localBlobs = shared, local
	}
	if b.balanceEvery > 0 && len(b.parts) > 1 && nc.ConnectedClusterName() != "" {
		b.balancer = upkeep.StartBalancer(b.deployment(), b.balanceEvery)
	}
	// One subscription per partition to its elections: attempts in flight
	// are sent again at once, and the balancer (if any) looks again.
	if b.parts[0] != b {
		b.moves.Notify(&b.rq.Interrupts) // the whole's own calls, if any
	}
	for _, p := range b.parts {
		b.moves.Notify(&p.rq.Interrupts)
		sub, serr := nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+p.cfg.Stream, func(*nats.Msg) {
			p.rq.Interrupts.Fire()
			if b.balancer != nil {
				b.balancer.Trigger()
			}
		})
		// Best effort for resends (a connection that may not hear
		// advisories resends after an attempt's timeout); the balancer
		// needs it.
		if serr != nil && b.balancer != nil {
			b.balancer.Close()
			return nil, fmt.Errorf("stream: watch leader elections: %w", serr)
		}
		p.electionSub = sub
	}
	if b.followIndex {
		b.indexFollower = b.startIndexFollower()
	}
	if b.repairCfg != nil && nc.ConnectedClusterName() != "" {
		if b.repairer, err = upkeep.StartRepairer(b.deployment(), *b.repairCfg); err != nil {
			if b.balancer != nil {
				b.balancer.Close()
			}
			if b.indexFollower != nil {
				b.indexFollower.close()
			}
			return nil, err
		}
	}
	return b, nil
}

// provision creates or checks one partition's stream, index, snapshot
// store and snapshot heads.
func (b *Backend) provision(ctx context.Context, want int) (err error) {
	cfg := b.cfg
	if b.stream, b.kv, err = provision(ctx, b.js, cfg); err != nil {
		return err
	}
	if got := b.stream.CachedInfo().Config.Replicas; got < want {
		b.warnings = append(b.warnings, fmt.Sprintf("stream %s has %d replica(s) on a cluster of %d or more servers: losing one server can lose sessions (raise it: nats stream edit %s --replicas %d)", cfg.Stream, got, want, cfg.Stream, want))
	}
	b.snaps, err = snapshots.Open(ctx, b.rq, b.tel, snapshots.Config{Bucket: cfg.SnapshotBucket(), Stream: cfg.Stream,
		Replicas: cfg.Replicas, RequestTimeout: cfg.RequestTimeout, CheckEpoch: b.checkEpoch})
	if err != nil {
		return err
	}
	return nil
}

// partOf is the partition holding session id.
func (b *Backend) partOf(id string) *Backend {
	return b.parts[PartitionOf(id, len(b.parts))]
}

// Warnings are what New found worth telling a human (a stream less
// replicated than its cluster allows).
func (b *Backend) Warnings() []string { return b.warnings }

// Config returns the backend's config (Replicas and Partitions as
// chosen).
func (b *Backend) Config() Config { return b.cfg }

// Blobs returns the deployment's store of offloaded content.
func (b *Backend) Blobs() *blobs.Store { return b.blobs }

// Uploads returns the deployment's staging of uploads.
func (b *Backend) Uploads() *blobs.Uploads {
	return blobs.NewUploads(b.parts[0].rq, b.cfg.Replicas, b.cfg.Stream+"_UPLOADS", b.cfg.Prefix+"_uploads")
}

// Generations returns the deployment's generations being streamed.
func (b *Backend) Generations() *live.Generations {
	g, err := live.New(b.parts[0].rq, live.DefaultConfig(b.cfg.Stream+"_LIVE", b.cfg.Prefix+"_live", b.cfg.Replicas))
	if err != nil {
		panic(err) // the defaults are valid
	}
	return g
}

// JetStream returns the JetStream context (replicas, consumers).
func (b *Backend) JetStream() jetstream.JetStream { return b.js }

func (b *Backend) maxPayload() int64 { return b.nc.MaxPayload() }

func newRequester(nc *nats.Conn, js jetstream.JetStream, cfg Config) *jsx.Requester {
	return &jsx.Requester{NC: nc, JS: js, AttemptTimeout: cfg.AttemptTimeout}
}

// withBound bounds a call by RequestTimeout (see jsx.WithBound).
func (b *Backend) withBound(ctx context.Context) (context.Context, context.CancelFunc) {
	return jsx.WithBound(ctx, b.cfg.RequestTimeout)
}

// Open implements session.Repo.
func (b *Backend) Open(ctx context.Context, id string) (session.Store, error) {
	return b.OpenStore(ctx, id)
}

// OpenStore is Open returning the concrete store. A session with a usable
// snapshot loads it and reads only the entries after it.
func (b *Backend) OpenStore(ctx context.Context, id string) (*Store, error) {
	s, _, err := b.OpenStoreInfo(ctx, id)
	return s, err
}

// traceBuild starts the span of building a session's tree (an open, a
// replica's rebuild); done ends it and records its duration by source.
func (b *Backend) traceBuild(ctx context.Context, name, id string) (context.Context, func(o *opened, err error)) {
	start := time.Now()
	ctx, span := b.tel.Tracer.Start(ctx, name, trace.WithAttributes(telemetry.SessionKey.String(id), telemetry.StreamKey.String(b.cfg.Stream)))
	return ctx, func(o *opened, err error) {
		defer span.End()
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			return
		}
		source := "stream"
		if o.info.FromSnapshot {
			source = "snapshot"
		}
		b.tel.RebuildDuration.Record(ctx, telemetry.Seconds(start), metric.WithAttributes(telemetry.SourceKey.String(source)))
		span.SetAttributes(telemetry.SourceKey.String(source), telemetry.SequenceKey.Int64(int64(o.last)),
			telemetry.EntriesKey.Int(o.tree.Len()), attribute.Int("sessionlog.tail", o.info.Tail))
		if o.info.Fallback != nil {
			span.AddEvent("sessionlog.snapshot.fallback", trace.WithAttributes(attribute.String("reason", o.info.Fallback.Error())))
		}
	}
}

// Loaded is a whole session read by LoadTree.
type Loaded struct {
	Tree  *session.Tree // complete
	Epoch uint64        // the sequence of the session's header
	Seq   uint64        // the last sequence applied
	Info  OpenInfo      // how it was read (also on error, as far as it got)
}

// LoadTree reads a whole session (snapshot and tail when it can) into a
// complete tree for a replica.
func (b *Backend) LoadTree(ctx context.Context, id string) (Loaded, error) {
	if err := session.ValidateSessionID(id); err != nil {
		return Loaded{}, err
	}
	b = b.partOf(id)
	start := time.Now()
	ctx, done := b.traceBuild(ctx, "sessionlog.rebuild", id)
	o, err := b.openTree(ctx, id, false)
	if err != nil {
		done(nil, err)
		return Loaded{}, err
	}
	if o.tree.Partial() {
		fallback, err := b.complete(ctx, id, o.tree, o.body, own(o.tree))
		if err != nil {
			done(nil, err)
			return Loaded{Info: o.info}, err
		}
		if fallback != nil {
			o.info.Fallback = fallback
		}
	}
	o.info.Took = time.Since(start)
	done(o, nil)
	return Loaded{Tree: o.tree, Epoch: o.epoch, Seq: o.last, Info: o.info}, nil
}

// Close stops what the backend runs in the background (the listener to
// the connection's moves, the leader balancer). Stores opened from it are
// closed by their owners. It is idempotent; the backend cannot list
// afterwards.
func (b *Backend) Close(ctx context.Context) error {
	b.closed.Store(true) // only the backend a caller holds lists
	if b.balancer != nil {
		b.balancer.Close()
	}
	if b.repairer != nil {
		b.repairer.Close()
	}
	if b.indexFollower != nil {
		b.indexFollower.close()
	}
	for _, p := range b.parts {
		if p.electionSub != nil {
			_ = p.electionSub.Unsubscribe()
		}
	}
	b.moves.Stop()
	return nil
}
