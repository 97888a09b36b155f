package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// repoFlags say where sessions live: a NATS URL, the embedded node on a
// data dir (the default), or a directory of JSONL files.
type repoFlags struct {
	data     string
	url      string
	files    string
	stream   string
	prefix   string
	replicas int
	// partitions is the layout's stream count (0: the deployment's).
	partitions int
	// offload is the size from which members are stored apart.
	offload int
	// keyFile (and prevKeyFile while rotating) encrypt the embedded
	// node's store at rest with cipher.
	keyFile, prevKeyFile, cipher string
	// redact turns on the default redaction rules; rules adds a file's.
	redact bool
	rules  rulesFlag
	warn   io.Writer // where New's warnings go (the verb's stderr)
	// share makes an embedded node (no serve running) listen on a free
	// loopback port and say so in the data dir's serve.url while it runs,
	// so that other invocations on the same data dir use it (a long watch
	// must not lock the others out).
	share bool
	// create lets the verb make the store (a node's data, a directory of
	// files) where there is none yet; the others, reading or changing
	// sessions that must exist, refuse with errNoStore instead of
	// leaving an empty store behind.
	create bool
}

// errNoStore says there are no sessions where a verb looked: nothing was
// ever created there.
var errNoStore = errors.New("no sessions here yet")

// rulesFlag reads redaction rules from a JSON file when the flag is set:
// [{"name":"internal-token","pattern":"itk_[A-Za-z0-9]{32}"}, …].
type rulesFlag struct {
	path  string
	rules []codec.RedactRule
}

func (f *rulesFlag) String() string { return f.path }

func (f *rulesFlag) Set(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rules []codec.RedactRule
	if err := json.Unmarshal(b, &rules); err != nil {
		return fmt.Errorf("%s: want a JSON array of {\"name\",\"pattern\"}: %w", path, err)
	}
	if _, err := codec.NewRedactor(rules); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	f.path, f.rules = path, rules
	return nil
}

func addRepoFlags(fs *flag.FlagSet) *repoFlags {
	r := &repoFlags{}
	fs.StringVar(&r.data, "data", envOr("SESSIONLOG_DATA", defaultDataDir()), "data dir of the embedded node ($SESSIONLOG_DATA)")
	fs.StringVar(&r.url, "url", os.Getenv("SESSIONLOG_URL"), "NATS URL of an existing deployment instead of the embedded node ($SESSIONLOG_URL)")
	fs.StringVar(&r.files, "files", "", "keep sessions as JSONL files in this directory instead of JetStream")
	fs.StringVar(&r.stream, "stream", "SESSIONS", "JetStream stream name")
	fs.StringVar(&r.prefix, "prefix", "sessions", "subject prefix")
	fs.IntVar(&r.replicas, "replicas", 0, "stream replicas when the stream is created (0: 1 on a single server, 3 in a cluster)")
	fs.IntVar(&r.partitions, "partitions", 0, fmt.Sprintf("streams sessions are spread over, fixed when the deployment is provisioned (0: the deployment's, 1 for a new one; at most %d)", stream.MaxPartitions))
	fs.IntVar(&r.offload, "offload", stream.DefaultOffloadThreshold, "store members of entries this large (bytes) apart, as blobs named by SHA-256 (0: never)")
	fs.StringVar(&r.keyFile, "encryption-key-file", os.Getenv("SESSIONLOG_ENCRYPTION_KEY_FILE"), "encrypt the embedded node's data at rest with the key in this file, mode 600, at least 32 bytes ($SESSIONLOG_ENCRYPTION_KEY_FILE)")
	fs.StringVar(&r.prevKeyFile, "encryption-prev-key-file", os.Getenv("SESSIONLOG_ENCRYPTION_PREV_KEY_FILE"), "while rotating keys: the key the data is encrypted with now ($SESSIONLOG_ENCRYPTION_PREV_KEY_FILE)")
	fs.StringVar(&r.cipher, "encryption-cipher", "chachapoly", "cipher of the encrypted store: chachapoly or aes")
	fs.BoolVar(&r.redact, "redact", false, "replace secrets (cloud and forge keys, private keys, bearer tokens, LLM provider keys) in entries before they are stored")
	fs.Var(&r.rules, "redact-rules", "also redact what these rules match: a JSON file [{\"name\":…,\"pattern\":…}] of RE2 patterns")
	r.warn = fs.Output()
	return r
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// defaultDataDir is $XDG_DATA_HOME/sessionlog, or ~/.local/share/sessionlog.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sessionlog")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "sessionlog")
	}
	return filepath.Join(home, ".local", "share", "sessionlog")
}

// serveURLFile is where a running `sessionlog serve` leaves its URL, so
// other invocations on the same data dir connect to it instead of starting
// a node of their own.
func serveURLFile(data string) string { return filepath.Join(data, "serve.url") }

// writeURLFile says where the data dir's node listens: written whole, then
// renamed into place, so that a reader never sees half a URL.
func writeURLFile(data, url string) error {
	return writeFileAtomic(serveURLFile(data), []byte(url+"\n"), 0o600)
}

// writeFileAtomic writes a file whole, then renames it into place: a
// reader (or a crash) never sees half of it.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(path+".tmp", data, mode); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// openedRepo is a repository with what must be closed after it.
type openedRepo struct {
	session.Repo
	close func(ctx context.Context) error
	// With JetStream: the connection, and whether the node is this
	// process's own (embedded, no serve running) rather than a serve's.
	nc       *nats.Conn
	embedded bool
	node     cluster.Config
}

func (r *repoFlags) streamConfig() stream.Config {
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix, cfg.Replicas, cfg.Partitions = r.stream, r.prefix, r.replicas, r.partitions
	cfg.OffloadThreshold = r.offload
	if r.redact || len(r.rules.rules) > 0 {
		cfg.Redact = &codec.RedactConfig{Defaults: r.redact, Rules: r.rules.rules}
	}
	return cfg
}

// nodeConfig is the embedded node's config for the data dir, encrypted
// when a key file is given.
func (r *repoFlags) nodeConfig() (cluster.Config, error) {
	cfg := cluster.DefaultConfig(r.data)
	if r.keyFile == "" {
		if r.prevKeyFile != "" {
			return cfg, fmt.Errorf("-encryption-prev-key-file needs -encryption-key-file, the new key")
		}
		return cfg, nil
	}
	key, err := cluster.LoadKeyFile(r.keyFile)
	if err != nil {
		return cfg, err
	}
	cfg.Encryption = &cluster.EncryptionConfig{Key: key, Cipher: r.cipher}
	if r.prevKeyFile != "" {
		if cfg.Encryption.PrevKey, err = cluster.LoadKeyFile(r.prevKeyFile); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.Validate()
}

func (r *repoFlags) open(ctx context.Context) (*openedRepo, error) {
	if r.files != "" {
		if _, err := os.Stat(r.files); err != nil && !r.create {
			return nil, fmt.Errorf("%w: %s is no directory of sessions (sessionlog new or import makes the first)", errNoStore, r.files)
		}
		repo, err := filestore.NewRepo(r.files, filestore.DefaultConfig())
		if err != nil {
			return nil, err
		}
		return &openedRepo{Repo: repo, close: func(context.Context) error { return nil }}, nil
	}
	url := r.url
	if url == "" {
		if b, err := os.ReadFile(serveURLFile(r.data)); err == nil {
			url = strings.TrimSpace(string(b))
		}
	}
	var nc *nats.Conn
	var node *cluster.Node
	var err error
	if url != "" {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// Reconnecting (to any node -url lists) is bounded by the
		// command's own deadline.
		nc, err = cluster.Dial(dctx, url)
		cancel()
		if err != nil && r.url == "" {
			// A stale serve.url from a serve that did not exit cleanly.
			url = ""
		} else if err != nil {
			return nil, err
		}
	}
	if url == "" {
		cfg, err := r.nodeConfig()
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(r.data, "jetstream")); err != nil && !r.create {
			return nil, fmt.Errorf("%w: the data dir %s holds no store, and this verb makes none (sessionlog new or import makes the first; -url reaches a deployment, -files a directory of files)", errNoStore, r.data)
		}
		if r.share {
			cfg.Listen = "127.0.0.1:0"
		}
		node, err = cluster.Start(ctx, cfg)
		if errors.Is(err, cluster.ErrDataDirInUse) {
			return nil, fmt.Errorf("%w (a `sessionlog serve` may be starting; pass -url to reach it)", err)
		}
		if err != nil {
			return nil, err
		}
		if nc, err = node.Connect(); err != nil {
			node.Close(ctx)
			return nil, err
		}
		if r.share {
			if err := writeURLFile(r.data, node.ClientURL()); err != nil {
				nc.Close()
				node.Close(ctx)
				return nil, err
			}
		}
	}
	scfg := r.streamConfig()
	if r.url == "" {
		// The data dir's own store (embedded, or its serve's): every write
		// goes through the redaction its entries are recorded to have gone
		// through (an edge's -redact), whichever verb makes it.
		if scfg.Redact, err = dataDirRedaction(r.data, scfg.Redact); err != nil {
			if r.share {
				os.Remove(serveURLFile(r.data))
			}
			closeNodeConn(ctx, nc, node)
			return nil, err
		}
	}
	b, err := stream.New(ctx, nc, scfg, stream.WithConflictPolicy(stream.Rebase))
	closeAll := func(ctx context.Context) error {
		if b != nil {
			b.Close(ctx)
		}
		nc.Close()
		if node != nil {
			if r.share {
				os.Remove(serveURLFile(r.data))
			}
			return node.Close(ctx)
		}
		return nil
	}
	if err != nil {
		closeAll(ctx)
		return nil, err
	}
	for _, w := range b.Warnings() {
		fmt.Fprintln(r.warn, "sessionlog: warning:", w)
	}
	or := &openedRepo{Repo: b, close: closeAll, nc: nc, embedded: node != nil}
	if node != nil {
		or.node, _ = r.nodeConfig()
	}
	return or, nil
}

// withRepo opens the repository, runs fn, and closes it.
func withRepo(ctx context.Context, rf *repoFlags, fn func(repo session.Repo) error) error {
	repo, err := rf.open(ctx)
	if err != nil {
		return err
	}
	err = fn(repo.Repo)
	if cerr := repo.close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}

// withSession opens one session of the repository for fn.
func withSession(ctx context.Context, rf *repoFlags, id string, fn func(s *session.Session) error) error {
	return withRepo(ctx, rf, func(repo session.Repo) error {
		st, err := repo.Open(ctx, id)
		if err != nil {
			return err
		}
		// A verb sees every write acknowledged before it began, through
		// whichever node of a cluster it asks: a replica behind may have
		// answered the open (a tree through one node missed an append
		// made through another).
		if c, ok := st.(interface{ CatchUp(context.Context) error }); ok {
			if err := c.CatchUp(ctx); err != nil {
				st.Close(ctx)
				return err
			}
		}
		sess, err := session.New(st, sysConfig())
		if err != nil {
			st.Close(ctx)
			return err
		}
		err = fn(sess)
		if cerr := st.Close(context.WithoutCancel(ctx)); err == nil {
			err = cerr
		}
		return err
	})
}

// isFile says whether a display verb's argument names a session file
// rather than a session id.
func isFile(arg string) bool {
	if !strings.HasSuffix(arg, ".jsonl") && !strings.ContainsRune(arg, os.PathSeparator) {
		return false
	}
	_, err := os.Stat(arg)
	return err == nil || strings.HasSuffix(arg, ".jsonl")
}

// dataDirRedaction is flags' redaction (nil: none) with the one dataDir
// records (redaction.json, see redactionInForce), which it does not
// change.
func dataDirRedaction(dataDir string, flags *codec.RedactConfig) (*codec.RedactConfig, error) {
	path := filepath.Join(dataDir, redactionFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return flags, nil
	}
	if err != nil {
		return nil, err
	}
	var rec codec.RedactConfig
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !rec.Defaults && len(rec.Rules) == 0 {
		return flags, nil
	}
	out := rec
	if flags != nil {
		out = flags.With(rec)
	}
	return &out, nil
}

// closeNodeConn closes what open made before it failed.
func closeNodeConn(ctx context.Context, nc *nats.Conn, node *cluster.Node) {
	nc.Close()
	if node != nil {
		node.Close(ctx)
	}
}
