// Package bench measures sessionlog against the engine under it, in one
// run on one machine: raw JetStream publishes against our appends (one
// writer, and many across 1/16/256 sessions), opening and building the
// context of 1k/10k/100k-entry sessions from the stream (with and without
// snapshots) and from a pi JSONL file, BuildContext alone on deep paths,
// memory per materialized entry, and the first page of a listing with many
// sessions. Every figure of ours is reported beside its baseline from the
// same run, as a ratio; `sessionlog bench` prints the table and can write
// it as Markdown (BENCHMARKS.md).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/stream"
)

// ErrInvalidConfig is returned by Config.Validate.
var ErrInvalidConfig = errors.New("bench: invalid config")

// Config says how much to measure.
type Config struct {
	// Ops is the number of appends per latency measurement.
	Ops int
	// PayloadBytes is the size of one appended entry, encoded.
	PayloadBytes int
	// Writers is the number of goroutines of the concurrent runs, and
	// Sessions the session counts they spread over.
	Writers  int
	Sessions []int
	// ManySessions, when set, adds the many-sessions part: a deployment
	// of that many sessions and what it costs (minutes at a million).
	ManySessions int
	// Settle is how long memory is left to settle before it is read in
	// that part (the server drops idle caches after ~10 s).
	Settle time.Duration
	// PartitionWriters and PartitionSessions shape the partitions part:
	// that many writers over that many sessions.
	PartitionWriters, PartitionSessions int
	// Duration bounds each concurrent run.
	Duration time.Duration
	// Sizes are the session lengths opened (and the path depths of
	// BuildContext).
	Sizes []int
	// ListSessions are the session counts listed.
	ListSessions []int
	// RetentionSessions is the store a retention policy is measured on.
	RetentionSessions int
	// BackupSessions, when set, adds the backup part: that many sessions
	// of BackupSessionBytes each, backed up and restored (minutes at
	// 10,000 of 100 KB).
	BackupSessions, BackupSessionBytes int
	// ClientOps is how many calls each client's latencies are taken over;
	// ClientsDir is where the clients are (clients/, from the repository).
	ClientOps  int
	ClientsDir string
	// MCPOps, when set, adds the mcp part: that many calls of each MCP
	// tool timed, on MCPSessions sessions.
	MCPOps, MCPSessions int
	// LangGraphOps, when set, adds the langgraph part: LangGraph's savers,
	// ours and PostgresSaver, on threads of that many checkpoints.
	LangGraphOps int
	// StreamChunks, when set, adds the aisdk part: resumable streams of
	// that many chunks, and StreamResumes resumes timed, on sessionlog
	// and on resumable-stream over Redis.
	StreamChunks, StreamResumes int
	// ADKSessions, when set, adds the adk part: ADK's session services,
	// that many sessions listed and a session of ADKEvents events loaded.
	ADKSessions, ADKEvents int
	// SearchSessions, when set, adds the search part: that many sessions
	// of SearchEntries messages indexed and searched (about 7 minutes at
	// 10,000 of 100).
	SearchSessions, SearchEntries int
	// EdgeEntries, when set, adds the edges part: an edge node writes that
	// many entries offline, then syncs with its hub.
	EdgeEntries int
	// Dir holds the nodes' data and the files (a temporary dir if empty).
	Dir string
	// HeavyEntries, HeavyImages and ImageBytes shape the heavy session:
	// that many entries, that many of them with an image of that size
	// (half of them repeats).
	HeavyEntries, HeavyImages, ImageBytes int
	// PiModules, if set, is a node_modules dir holding
	// @earendil-works/pi-coding-agent (or @mariozechner/…): pi's own loader is timed on the same
	// files (needs node).
	PiModules string
	// TranscriptFile is the Claude Code transcript the transcripts part
	// imports and follows.
	TranscriptFile string
	// Only, if set, limits the run to these parts (see Parts).
	Only []string
	// Progress, if set, gets a line per step.
	Progress io.Writer
}

// Parts are the measurements a run can be limited to.
var Parts = []string{"appends", "reads", "partitions", "opens", "heavy", "lists", "build", "memory", "encryption", "retention", "backup", "clients", "sessions", "search", "langgraph", "aisdk", "adk", "mcp", "freshness", "transcripts", "edges"}

// DefaultTranscript is a real Claude Code transcript kept as a test
// fixture, from the repository's root.
const DefaultTranscript = "transcript/testdata/claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"

// does reports whether the run includes a part.
func (c Config) does(part string) bool { return len(c.Only) == 0 || slices.Contains(c.Only, part) }

// DefaultConfig is the full run BENCHMARKS.md reports.
func DefaultConfig() Config {
	return Config{
		Ops: 2000, PayloadBytes: 1024, Writers: 16, Sessions: []int{1, 16, 256}, Duration: 5 * time.Second,
		PartitionWriters: 64, PartitionSessions: 256, Settle: 12 * time.Second,
		Sizes: []int{1000, 10000, 100000}, ListSessions: []int{1000, 10000, 100000}, RetentionSessions: 10000, BackupSessionBytes: 100_000, ClientOps: 500, ClientsDir: "clients",
		// SearchSessions is left 0: set, it runs the search part (minutes at 10,000).
		SearchEntries: 100, HeavyEntries: 2000, HeavyImages: 500, ImageBytes: 1 << 20,
		TranscriptFile: DefaultTranscript, EdgeEntries: 100_000,
	}
}

// QuickConfig is a small run (seconds) that exercises every measurement.
func QuickConfig() Config {
	return Config{
		Ops: 50, PayloadBytes: 1024, Writers: 4, Sessions: []int{1, 4}, Duration: 300 * time.Millisecond,
		PartitionWriters: 8, PartitionSessions: 16,
		Sizes: []int{100, 1000}, ListSessions: []int{100, 500}, RetentionSessions: 200, BackupSessions: 50, BackupSessionBytes: 20_000, ClientOps: 20, ClientsDir: "clients",
		SearchSessions: 100, SearchEntries: 20,
		HeavyEntries: 200, HeavyImages: 40, ImageBytes: 64 << 10,
		TranscriptFile: DefaultTranscript, EdgeEntries: 2000,
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.does("heavy") && (c.HeavyEntries < 1 || c.HeavyImages < 1 || c.HeavyImages > c.HeavyEntries || c.ImageBytes < 1024):
		return fmt.Errorf("%w: the heavy session needs entries, at most as many images, of at least 1 KiB", ErrInvalidConfig)
	case c.SearchSessions < 0 || (c.SearchSessions > 0 && c.SearchEntries < 1):
		return fmt.Errorf("%w: search needs a positive number of entries per session", ErrInvalidConfig)
	case c.does("retention") && c.RetentionSessions < 2:
		return fmt.Errorf("%w: retention needs at least 2 sessions", ErrInvalidConfig)
	case c.Ops < 1 || c.PayloadBytes < 64 || c.Writers < 1 || c.Duration <= 0 || c.PartitionWriters < 1 || c.PartitionSessions < 1 || c.ManySessions < 0 || c.Settle < 0:
		return fmt.Errorf("%w: Ops, Writers and Duration must be positive, PayloadBytes at least 64", ErrInvalidConfig)
	case len(c.Sessions) == 0 || len(c.Sizes) == 0 || len(c.ListSessions) == 0:
		return fmt.Errorf("%w: Sessions, Sizes and ListSessions need at least one value", ErrInvalidConfig)
	}
	for _, part := range c.Only {
		if !slices.Contains(Parts, part) {
			return fmt.Errorf("%w: no part %q (parts: %s)", ErrInvalidConfig, part, strings.Join(Parts, ", "))
		}
	}
	for _, n := range slices.Concat(c.Sessions, c.Sizes, c.ListSessions) {
		if n < 1 {
			return fmt.Errorf("%w: counts must be positive, not %d", ErrInvalidConfig, n)
		}
	}
	return nil
}

// Run measures everything and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "sessionlog-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	r := &Report{Machine: machine(), Config: cfg, Started: time.Now(), Conditions: startConditions(cfg)}
	p := progress{cfg.Progress}
	for _, syncAlways := range []bool{true, false} {
		n, err := startNode(ctx, dir, syncAlways)
		if err != nil {
			return nil, err
		}
		err = func() error {
			defer n.close()
			if cfg.does("appends") {
				p.say("appends, sync %s", n.sync)
				if err := appends(ctx, cfg, n, r, p); err != nil {
					return err
				}
			}
			if syncAlways {
				if cfg.does("reads") {
					if err := readsUnderWrites(ctx, cfg, n, r, p); err != nil {
						return err
					}
				}
				if cfg.does("partitions") {
					if err := partitionsPart(ctx, cfg, n, dir, r, p); err != nil {
						return err
					}
				}
				if cfg.does("opens") {
					if err := opens(ctx, cfg, n, dir, r, p); err != nil {
						return err
					}
				}
				if cfg.does("freshness") {
					if err := freshness(ctx, cfg, n, r, p); err != nil {
						return err
					}
				}
				if cfg.does("heavy") {
					if err := heavy(ctx, cfg, n, r, p); err != nil {
						return err
					}
				}
				if cfg.does("retention") {
					if err := retention(ctx, cfg, n, r, p); err != nil {
						return err
					}
				}
				if cfg.does("transcripts") {
					if err := transcriptsPart(ctx, cfg, n, r, p); err != nil {
						return err
					}
				}
				if cfg.SearchSessions > 0 && cfg.does("search") {
					if err := searchPart(ctx, cfg, n, dir, r, p); err != nil {
						return err
					}
				}
				if cfg.BackupSessions > 0 && cfg.does("backup") {
					if err := backupPart(ctx, cfg, n, dir, r, p); err != nil {
						return err
					}
				}
				return nil
			}
			// Listing reads the index, not the entries: made faster on
			// this node, it measures the same thing.
			if cfg.does("lists") {
				return lists(ctx, cfg, n, r, p)
			}
			return nil
		}()
		if err != nil {
			return nil, err
		}
	}
	if cfg.ClientOps > 0 && cfg.does("clients") {
		if err := clientsPart(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.MCPOps > 0 && cfg.does("mcp") {
		if err := mcpPart(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.LangGraphOps > 0 && cfg.does("langgraph") {
		if err := langGraphPart(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.StreamChunks > 0 && cfg.does("aisdk") {
		if err := aiSDKPart(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.ADKSessions > 0 && cfg.does("adk") {
		if err := adkPart(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.EdgeEntries > 0 && cfg.does("edges") {
		if err := edgesPart(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.does("encryption") {
		if err := encryption(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	if cfg.does("build") {
		p.say("BuildContext")
		buildContexts(cfg, r)
	}
	if cfg.does("memory") {
		p.say("memory")
		memory(cfg, r)
	}
	if cfg.ManySessions > 0 && cfg.does("sessions") {
		if err := manySessions(ctx, cfg, dir, r, p); err != nil {
			return nil, err
		}
	}
	r.Took = time.Since(r.Started)
	r.Conditions.finish()
	return r, nil
}

// node is one embedded server with a connection.
type node struct {
	n    *cluster.Node
	nc   *nats.Conn
	sync string
	seq  int
}

func startNode(ctx context.Context, dir string, syncAlways bool) (*node, error) {
	name := "sync-default"
	if syncAlways {
		name = "sync-always"
	}
	return startNodeWith(ctx, dir+"/"+name, func(c *cluster.Config) { c.SyncAlways = syncAlways })
}

// startNodeWith starts a node on dir with its config tweaked.
func startNodeWith(ctx context.Context, dir string, tweak func(*cluster.Config)) (*node, error) {
	cfg := cluster.DefaultConfig(dir)
	tweak(&cfg)
	syncAlways := cfg.SyncAlways
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	nc, err := n.Connect()
	if err != nil {
		n.Close(ctx)
		return nil, err
	}
	label := "always"
	if !syncAlways {
		label = "default (2 min)"
	}
	return &node{n: n, nc: nc, sync: label}, nil
}

func (n *node) close() { n.n.Close(context.Background()) }

// backend provisions a stream of its own.
func (n *node) backend(ctx context.Context, tweak func(*stream.Config), opts ...stream.Option) (*stream.Backend, error) {
	n.seq++
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = fmt.Sprintf("B%d", n.seq), fmt.Sprintf("b%d", n.seq)
	cfg.SnapshotEvery, cfg.SnapshotOnCompaction = 0, false // snapshots only when a step asks
	if tweak != nil {
		tweak(&cfg)
	}
	return stream.New(ctx, n.nc, cfg, opts...)
}

type progress struct{ w io.Writer }

func (p progress) say(format string, args ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, "bench: "+format+"\n", args...)
	}
}

// latencies summarises a sample.
type latencies []time.Duration

func (l latencies) pct(p int) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%s, %d CPUs (GOMAXPROCS %d), %s, host %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), host)
}
