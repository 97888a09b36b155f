package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/internal/parallel"
)

// The layout: a deployment's sessions are spread over P partitions, each
// a stream of its own (its own raft group, leader and fsync pipeline)
// with its own index, snapshot store and snapshot heads. A session lives
// in partition PartitionOf(id, P) for its whole life. P is fixed when the
// deployment is provisioned and recorded in the metadata of every
// partition's stream, where every client reads it (Config.Partitions 0).
//
//	P = 1: stream <Stream>, subjects <Prefix>.<id>, index
//	       <Stream>_INDEX, snapshots <Stream>_SNAPSHOTS
//	P > 1: partition i is stream <Stream>_P<i>, subjects
//	       <Prefix>.p<i>.<id>, index <Stream>_P<i>_INDEX,
//	       snapshots <Stream>_P<i>_SNAPSHOTS
//
// A session is one subject: the server's state grows by one subject per
// session, and every read of a session, its expected-last-sequence check
// and its purge name that subject literally, which the server answers from
// its per-subject index (a wildcard over a session's subjects is answered
// by scanning the stream's blocks after the start: see BENCHMARKS.md).
// Deployments made before this layout have a subject per entry type,
// <Prefix>[.p<i>].<id>.<type>; their streams carry no
// sessionlog.subjects metadata and keep that layout (Config.typed).
//
// An edge node (Config.Edge) keeps apart what it wrote and what came from
// its hub: <Prefix>[.p<i>].<id>.o and <Prefix>[.p<i>].<id>.h, a session
// being <Prefix>[.p<i>].<id>.* (its reads, its sequence check and its
// purge name that filter). The hub takes in the edge's .o subjects only,
// onto its own <id> ones; the edge takes in all of the hub's onto .h. So
// nothing goes round: what the hub sent is never sent back, however long
// the edge was away (a message's id recognises it only within the
// duplicate window). What the edge wrote comes back from the hub onto .h,
// where the window or, past it, the readers pass over it; it is never
// sent up again. A session the edge keeps on the machine (WithKeepLocal)
// is on <Prefix>[.p<i>].<id>.l, which the hub does not take in either.

// MaxPartitions bounds P: each partition is four replicated assets
// (stream, index, snapshot objects, snapshot heads).
const MaxPartitions = 64

// Metadata keys of a partition's stream.
const (
	metaPartitions = "sessionlog.partitions" // P
	metaPartition  = "sessionlog.partition"  // this stream's i
	metaHash       = "sessionlog.hash"       // how ids map to partitions
	hashName       = "fnv1a32-mod"
	metaSubjects   = "sessionlog.subjects" // "session": one subject per session
	subjectsName   = "session"
	edgeName       = "session-origin"    // the edge layout
	metaOrigin     = "sessionlog.origin" // the node its writes are made on (Config.Origin)
)

// The last token of a session's subjects in the edge layout.
const (
	writtenHere = "o" // written on this node
	fromHub     = "h" // taken in from the hub
	keptHere    = "l" // written on this node, kept on it (WithKeepLocal)
)

// ErrPartitions is returned by New when the deployment's partition count
// is not the configured one, or cannot be told.
var ErrPartitions = errors.New("stream: partition layout mismatch")

// PartitionOf is the partition of session id among n: the 32-bit FNV-1a
// hash of the id's UTF-8 bytes, modulo n. Clients in other languages
// compute the same to address a session's stream directly.
func PartitionOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// partitions is P as resolved (at least 1).
func (c Config) partitions() int { return max(c.Partitions, 1) }

// partition returns the config of partition i: its stream, subject root
// and buckets. With one partition it is c itself. A partition's config
// routes nothing further (its partitions() is 1); it remembers its place
// (part of total) for its stream's metadata.
func (c Config) partition(i int) Config {
	p := c
	p.part, p.total, p.Partitions = i, c.partitions(), 1
	if p.total == 1 {
		return p
	}
	p.Stream = fmt.Sprintf("%s_P%d", c.Stream, i)
	p.Prefix = fmt.Sprintf("%s.p%d", c.Prefix, i)
	if c.Index != "" {
		p.Index = fmt.Sprintf("%s_P%d", c.Index, i)
	}
	return p
}

// partitionOf is the config of the partition holding session id.
func (c Config) partitionOf(id string) Config {
	return c.partition(PartitionOf(id, c.partitions()))
}

// partitionOfSubject is the number of the partition a subject of the
// layout belongs to.
func (c Config) partitionOfSubject(subject string) (int, bool) {
	if c.partitions() == 1 {
		return 0, true
	}
	rest, ok := strings.CutPrefix(subject, c.Prefix+".p")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= c.partitions() || strconv.Itoa(i) != num {
		return 0, false
	}
	return i, true
}

// Streams names every partition's stream, in order.
func (c Config) Streams() []string {
	out := make([]string, c.partitions())
	for i := range out {
		out[i] = c.partition(i).Stream
	}
	return out
}

// StreamOf names the stream that holds session id.
func (c Config) StreamOf(id string) string { return c.partitionOf(id).Stream }

// streamMetadata is what a partition's stream records of the layout.
func (c Config) streamMetadata() map[string]string {
	md := map[string]string{
		metaPartitions: strconv.Itoa(max(c.total, 1)),
		metaPartition:  strconv.Itoa(c.part),
		metaHash:       hashName,
	}
	switch {
	case c.edge:
		md[metaSubjects] = edgeName
	case !c.typed:
		md[metaSubjects] = subjectsName
	}
	if c.Origin != "" {
		md[metaOrigin] = c.Origin
	}
	return md
}

// settleNode makes every writer of the deployment's streams stamp the
// same origin and, on an edge, follow the same sync rules: a backend
// given them records them in the streams' metadata (serve, from its
// JetStream domain and flags); one given none (the CLI, a client on the
// node) takes the recorded ones.
func (b *Backend) settleNode(ctx context.Context) error {
	md := b.parts[0].stream.CachedInfo().Config.Metadata
	origin, given := b.cfg.Origin, b.cfg.Origin != ""
	if origin == "" {
		origin = md[metaOrigin]
	}
	rules := syncRulesOf(md)
	if b.cfg.Sync != nil {
		rules = *b.cfg.Sync
	}
	if err := rules.Validate(); err != nil {
		return err
	}
	if !rules.none() && !b.cfg.edge {
		return fmt.Errorf("%w: sync rules choose what an edge sends its hub; this deployment is not an edge", ErrInvalidConfig)
	}
	for _, p := range b.parts {
		p.cfg.Origin, p.cfg.syncRules = origin, rules
		cfg := p.stream.CachedInfo().Config
		want := maps.Clone(cfg.Metadata)
		if want == nil {
			want = map[string]string{}
		}
		if origin != "" {
			want[metaOrigin] = origin
		}
		rules.record(want)
		// A node that syncs (given its origin) also widens the duplicate
		// window to its config's: see Config.DedupeWindow.
		if maps.Equal(want, cfg.Metadata) && (!given || cfg.Duplicates >= b.cfg.DedupeWindow) {
			continue
		}
		if given {
			cfg.Duplicates = max(cfg.Duplicates, b.cfg.DedupeWindow)
		}
		cfg.Metadata = want
		if err := p.updateStream(ctx, cfg); err != nil {
			return fmt.Errorf("stream: record the origin %q of %s: %w", origin, cfg.Name, err)
		}
	}
	b.cfg.Origin, b.cfg.syncRules = origin, rules
	return nil
}

// updateStream gives p's stream cfg (its metadata: what every writer
// follows), waiting out elections.
func (p *Backend) updateStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	err := Provisioning(ctx, func(ctx context.Context) error {
		s, err := p.js.UpdateStream(ctx, cfg)
		if err == nil {
			p.stream = s
		}
		return err
	})
	if errors.Is(err, jetstream.ErrStreamSourceNotSupported) {
		return nil
	}
	return err
}

// subjectLayout reads a stream's subject layout from its metadata: none
// is the subject-per-type layout of deployments made before it.
func subjectLayout(md map[string]string) (typed, edge bool, err error) {
	switch v := md[metaSubjects]; v {
	case "":
		return true, false, nil
	case subjectsName:
		return false, false, nil
	case edgeName:
		return false, true, nil
	default:
		return false, false, fmt.Errorf("%w: metadata says subjects per %q", ErrPartitions, v)
	}
}

// checkLayout reports how an existing stream's metadata disagrees with
// partition c's place in the layout. A stream without it predates
// partitions: it is the one partition of P = 1.
func checkLayout(got jetstream.StreamConfig, c Config) []string {
	n, i := got.Metadata[metaPartitions], got.Metadata[metaPartition]
	total := max(c.total, 1)
	if n == "" && i == "" && total == 1 && c.typed {
		return nil
	}
	var bad []string
	if n != strconv.Itoa(total) || i != strconv.Itoa(c.part) {
		bad = append(bad, fmt.Sprintf("metadata says partition %q of %q, not %d of %d", i, n, c.part, total))
	}
	if h := got.Metadata[metaHash]; h != hashName {
		bad = append(bad, fmt.Sprintf("metadata says ids map to partitions by %q, not %q", h, hashName))
	}
	if typed, edge, err := subjectLayout(got.Metadata); err != nil || typed != c.typed || edge != c.edge {
		bad = append(bad, fmt.Sprintf("metadata says subjects per %q, the other partitions per %q", got.Metadata[metaSubjects], c.streamMetadata()[metaSubjects]))
	}
	return bad
}

// resolveLayout finds the deployment's layout: its partition count from
// the stream <Stream> (one partition) or <Stream>_P0 (its metadata), or,
// on a deployment with neither, the configured count (1 by default); and
// its subject layout from the same stream (a new deployment gets a subject
// per session, or the edge layout with Config.Edge). It refuses a
// deployment made otherwise than Config.Edge asks, one with both streams, and a
// configured count that differs.
func resolveLayout(ctx context.Context, js jetstream.JetStream, cfg Config) (Config, error) {
	n, found, err := resolvePartitions(ctx, js, cfg)
	if err != nil {
		return cfg, err
	}
	cfg.Partitions = n
	cfg.edge = cfg.Edge
	if found != nil {
		name := found.CachedInfo().Config.Name
		if cfg.typed, cfg.edge, err = subjectLayout(found.CachedInfo().Config.Metadata); err != nil {
			return cfg, fmt.Errorf("%w (stream %s)", err, name)
		}
		if cfg.Edge && !cfg.edge {
			return cfg, fmt.Errorf("%w: %s was made without -hub: an edge keeps what it wrote apart from what its hub sends, which this deployment's streams do not; give the edge a data dir of its own (sessionlog export / import to bring sessions over)", ErrPartitions, name)
		}
	}
	cfg.Edge = cfg.edge
	return cfg, nil
}

// resolvePartitions is resolveLayout's partition count, and the stream it
// read it from (nil on a new deployment).
func resolvePartitions(ctx context.Context, js jetstream.JetStream, cfg Config) (int, jetstream.Stream, error) {
	lookup := func(name string) (s jetstream.Stream, err error) {
		err = Provisioning(ctx, func(ctx context.Context) error {
			s, err = js.Stream(ctx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				s, err = nil, nil
			}
			return err
		})
		return s, err
	}
	single, err := lookup(cfg.Stream)
	if err != nil {
		return 0, nil, fmt.Errorf("stream: look up %s: %w", cfg.Stream, err)
	}
	first, err := lookup(cfg.Stream + "_P0")
	if err != nil {
		return 0, nil, fmt.Errorf("stream: look up %s_P0: %w", cfg.Stream, err)
	}
	n, found := cfg.partitions(), single
	switch {
	case single != nil && first != nil:
		return 0, nil, fmt.Errorf("%w: both %s and %s_P0 exist: one deployment, two layouts", ErrPartitions, cfg.Stream, cfg.Stream)
	case single != nil:
		n = 1
		if v := single.CachedInfo().Config.Metadata[metaPartitions]; v != "" && v != "1" {
			return 0, nil, fmt.Errorf("%w: %s says %s partitions", ErrPartitions, cfg.Stream, v)
		}
	case first != nil:
		found = first
		v := first.CachedInfo().Config.Metadata[metaPartitions]
		if n, err = strconv.Atoi(v); err != nil || n < 2 || n > MaxPartitions {
			return 0, nil, fmt.Errorf("%w: %s_P0 says %q partitions", ErrPartitions, cfg.Stream, v)
		}
	}
	if cfg.Partitions != 0 && cfg.Partitions != n {
		return 0, nil, fmt.Errorf("%w: the deployment has %d partition(s), the config asks for %d (the count is fixed when a deployment is provisioned)", ErrPartitions, n, cfg.Partitions)
	}
	return n, found, nil
}

// eachPart runs fn on every partition at once (each a round trip or more
// to its own stream leader) and returns their errors joined.
func (b *Backend) eachPart(fn func(i int, p *Backend) error) error {
	return parallel.Each(len(b.parts), func(i int) error { return fn(i, b.parts[i]) })
}
