package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

var (
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("cluster: invalid config")
	// ErrNotReady is returned by Start when the node did not become ready
	// (accepting connections, JetStream enabled) within Config.ReadyTimeout.
	ErrNotReady = errors.New("cluster: node not ready")
	// ErrClosed is returned by Connect after Close.
	ErrClosed = errors.New("cluster: node closed")
	// ErrDataDirInUse is returned by Start when another node (in this or
	// another process) runs on the same data dir.
	ErrDataDirInUse = errors.New("cluster: data dir in use by another node")
)

// Config configures an embedded node.
type Config struct {
	// DataDir holds the JetStream file store. Required.
	DataDir string
	// ServerName names the node (default "sessionlog").
	ServerName string
	// Listen is the client address ("127.0.0.1:4222", port 0 for a random
	// one). Empty: no TCP listener; only in-process connections.
	Listen string
	// SyncAlways fsyncs every write before acknowledging it. On by
	// default: with the server's periodic sync, acknowledged writes can be
	// lost in a power failure.
	SyncAlways bool
	// MaxStore bounds the file store in bytes (0: the server's default,
	// a share of the disk).
	MaxStore int64
	// MaxMemory bounds memory storage in bytes (0: the server's default).
	MaxMemory int64
	// MaxPayload is the largest message the node accepts (0: 8 MiB).
	MaxPayload int32
	// MaxConnections bounds the node's client connections, all tenants
	// together (0: the server's default, 65,536): keep it within the
	// process's descriptors (FileBudget), so that a flood of connections
	// is refused by the server rather than failing the process's other
	// files and sockets.
	MaxConnections int
	// ReadyTimeout bounds how long Start waits for the node.
	ReadyTimeout time.Duration
	// Logs sends the server's log to stderr.
	Logs bool
	// Cluster, when set, makes the node one of a JetStream cluster.
	Cluster *Join
	// Auth, when set, requires credentials and gives each tenant an
	// account of its own (see AuthConfig); connect with ConnectTenant.
	Auth *AuthConfig
	// TLS, when set, serves clients over TLS.
	TLS *TLSConfig
	// Encryption, when set, encrypts the store at rest (encryption.go).
	Encryption *EncryptionConfig
	// Domain is the node's JetStream domain ("": none). Nodes linked as
	// leafnodes need one each — the hub's, every edge's — so that each
	// keeps its own JetStream and reaches the other's by name
	// ($JS.<domain>.API).
	Domain string
	// LeafListen, when set, accepts edge nodes' leafnode links at this
	// address ("0.0.0.0:7422"; port 0: any). With Auth an edge signs in
	// as a tenant's user and its link is that tenant's account's alone.
	LeafListen string
	// Hub, when set, links this node to a hub as a leafnode (see edge.go):
	// the node works alone, and its link comes and goes.
	Hub *HubConfig
	// Say, when set, hears what the node does by itself that its operator
	// should know (JetStream restarted once space is back: storage.go).
	Say func(string)
	// BrokenAfter is how long one of the node's own connections may stay
	// away from its server before the node is broken (Broken; see
	// watch.go). 0: DefaultBrokenAfter.
	BrokenAfter time.Duration
}

// Join joins a node to a JetStream cluster over routes.
type Join struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is this node's route address ("0.0.0.0:6222").
	Listen string
	// Routes are the other nodes' route URLs ("nats-route://host:6222").
	Routes []string
	// Size is the number of nodes: readiness waits for routes to the
	// others and a JetStream meta leader this node is current with.
	Size int
	// Advertise is the route address other nodes learn for this one
	// (behind NAT or a proxy); empty: Listen.
	Advertise string
}

// DefaultConfig returns the embedded default for dataDir: no TCP listener,
// fsync always, 8 MiB messages.
func DefaultConfig(dataDir string) Config {
	return Config{
		DataDir:      dataDir,
		ServerName:   "sessionlog",
		SyncAlways:   true,
		MaxPayload:   8 << 20,
		ReadyTimeout: 30 * time.Second,
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.DataDir == "":
		return fmt.Errorf("%w: DataDir is required", ErrInvalidConfig)
	case c.ReadyTimeout <= 0:
		return fmt.Errorf("%w: ReadyTimeout must be positive", ErrInvalidConfig)
	case c.MaxPayload < 0 || c.MaxPayload > 64<<20:
		return fmt.Errorf("%w: MaxPayload %d outside 0..64MiB", ErrInvalidConfig, c.MaxPayload)
	case c.MaxStore < 0 || c.MaxMemory < 0 || c.MaxConnections < 0:
		return fmt.Errorf("%w: negative storage or connection limit", ErrInvalidConfig)
	case c.BrokenAfter < 0:
		return fmt.Errorf("%w: negative BrokenAfter", ErrInvalidConfig)
	}
	if c.Auth != nil {
		if err := c.Auth.Validate(); err != nil {
			return err
		}
	}
	if c.Encryption != nil {
		if err := c.Encryption.validate(); err != nil {
			return err
		}
	}
	if t := c.TLS; t != nil && (t.CertFile == "" || t.KeyFile == "") {
		return fmt.Errorf("%w: TLS needs a certificate and a key file", ErrInvalidConfig)
	}
	if err := c.validateLeaf(); err != nil {
		return err
	}
	if cl := c.Cluster; cl != nil {
		switch {
		case c.ServerName == "" || c.ServerName == "sessionlog":
			return fmt.Errorf("%w: a clustered node needs a ServerName of its own", ErrInvalidConfig)
		case cl.Name == "" || strings.ContainsAny(cl.Name, " .*>"):
			return fmt.Errorf("%w: cluster name %q", ErrInvalidConfig, cl.Name)
		case cl.Size < 1:
			return fmt.Errorf("%w: cluster size %d", ErrInvalidConfig, cl.Size)
		case c.Listen == "":
			return fmt.Errorf("%w: a clustered node needs a client listener", ErrInvalidConfig)
		case len(cl.Routes) == 0 && cl.Size > 1:
			return fmt.Errorf("%w: a cluster of %d needs routes to the other nodes", ErrInvalidConfig, cl.Size)
		}
		if _, _, err := splitHostPort(cl.Listen); err != nil {
			return fmt.Errorf("%w: cluster listen address: %v", ErrInvalidConfig, err)
		}
		for _, r := range cl.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Scheme != "nats-route" || u.Port() == "" {
				return fmt.Errorf("%w: route %q (want nats-route://host:port)", ErrInvalidConfig, r)
			}
		}
	}
	return nil
}

// Node is a running embedded NATS server with JetStream.
type Node struct {
	srv  *server.Server
	opts *server.Options // as the server took them (ports it chose among them)
	cfg  Config
	lock *os.File
	keys serviceKeys
	tls  *tls.Config // for the node's own connections
	// relays bound an edge's link (HubConfig.Bandwidth).
	relays []*relay

	mu     sync.Mutex
	closed bool
	conns  []*nats.Conn
	watch  *connWatch // the node's own connections (watch.go)
	// storage is the storage watcher's state (storage.go).
	storage storageWatch
	// linkLog keeps what the hub answered an edge's link with (edges only).
	linkLog *linkLog

	// The fence's goroutine (clustered nodes only): see fence.go.
	stopFence chan struct{}
	fenced    chan struct{}
}

// Start runs an embedded node and waits until it accepts connections and
// JetStream is up.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n, err := start(ctx, cfg)
	if err != nil {
		lock.Close()
		return nil, err
	}
	n.lock = lock
	return n, nil
}

func start(ctx context.Context, cfg Config) (*Node, error) {
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		JetStream:          true,
		StoreDir:           filepath.Join(cfg.DataDir, "jetstream"),
		SyncAlways:         cfg.SyncAlways,
		JetStreamMaxStore:  cfg.MaxStore,
		JetStreamMaxMemory: cfg.MaxMemory,
		MaxPayload:         cfg.MaxPayload,
		NoSigs:             true,
		NoLog:              !cfg.Logs,
	}
	if opts.ServerName == "" {
		opts.ServerName = "sessionlog"
	}
	if opts.MaxPayload == 0 {
		opts.MaxPayload = 8 << 20
	}
	// The server refuses a max_pending below max_payload.
	opts.MaxPending = int64(opts.MaxPayload) * 8
	if err := checkKeys(opts, cfg); err != nil {
		return nil, err
	}
	keys, err := applyAuth(opts, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConnections > 0 {
		opts.MaxConn = cfg.MaxConnections
	}
	relays, err := applyLeaf(opts, cfg)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started { // the node's are closed by Close
			for _, r := range relays {
				r.close()
			}
		}
	}()
	var clientTLS *tls.Config
	if cfg.TLS != nil {
		if clientTLS, err = cfg.TLS.clientTLS(); err != nil {
			return nil, err
		}
	}
	if cl := cfg.Cluster; cl != nil {
		// A node told to stop hands its leaderships (streams, consumers,
		// the meta group) to the others first, then closes its clients
		// over a moment so that they reconnect elsewhere: writers wait a
		// handover instead of an election (see Close).
		opts.LameDuckDuration, opts.LameDuckGracePeriod = 2*time.Second, time.Second
		// A route that stopped carrying anything (a silent partition) is
		// dropped within about six seconds, not the default four minutes,
		// so that the fence (fence.go) sees it.
		opts.PingInterval, opts.MaxPingsOut = 2*time.Second, 2
		host, port, _ := splitHostPort(cl.Listen)
		opts.Cluster = server.ClusterOpts{Name: cl.Name, Host: host, Port: port, Advertise: cl.Advertise}
		opts.Routes = server.RoutesFromStr(strings.Join(cl.Routes, ","))
	}
	if cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("%w: Listen: %v", ErrInvalidConfig, err)
		}
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: new server: %w", err)
	}
	if cfg.Logs {
		srv.ConfigureLogger()
	}
	var ll *linkLog
	if cfg.Hub != nil {
		// What the hub answers the link with is only logged: keep it.
		ll = &linkLog{next: srv.Logger()}
		srv.SetLoggerV2(ll, false, false, false)
	}
	// A port in use is said at once, naming it: the server would only
	// fail to accept, and its start wait out ReadyTimeout.
	if err := portsFree(cfg); err != nil {
		return nil, err
	}
	go srv.Start()
	deadline := time.Now().Add(cfg.ReadyTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := waitReady(ctx, srv, deadline); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: not accepting connections on %s after %v", ErrNotReady, cfg.Listen, cfg.ReadyTimeout)
	}
	brokenAfter := cfg.BrokenAfter
	if brokenAfter == 0 {
		brokenAfter = DefaultBrokenAfter
	}
	n := &Node{srv: srv, opts: opts, cfg: cfg, keys: keys, tls: clientTLS, relays: relays, watch: newConnWatch(brokenAfter), linkLog: ll}
	for {
		err := n.Ready()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			// Measured above, before the server is shut down.
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("%w after %v: %v", ErrNotReady, cfg.ReadyTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := writeKeyCheck(cfg); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, err
	}
	if cfg.Cluster != nil {
		n.stopFence, n.fenced = make(chan struct{}), make(chan struct{})
		go n.fence(n.stopFence, n.fenced)
	}
	n.storage.stop, n.storage.done = make(chan struct{}), make(chan struct{})
	go n.watchStorage(cfg.Say)
	started = true
	return n, nil
}

// ClientURL returns the node's client URL, or "" without a listener.
func (n *Node) ClientURL() string {
	if n.cfg.Listen == "" {
		return ""
	}
	return n.srv.ClientURL()
}

// Server exposes the embedded server (tests, monitoring).
func (n *Node) Server() *server.Server { return n.srv }

// Connect opens a client connection to the node, in-process when it has no
// listener. The node closes it on Close if the caller has not.
func (n *Node) Connect(opts ...nats.Option) (*nats.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	opts = append([]nats.Option{nats.Name("sessionlog")}, opts...)
	var named nats.Options
	for _, o := range opts {
		_ = o(&named)
	}
	// Last: the node's own connections stay with its server (watch.go).
	opts = append(opts, n.watch.options(named.Name)...)
	if n.tls != nil {
		opts = append(opts, nats.Secure(n.tls))
	}
	var nc *nats.Conn
	var err error
	if n.cfg.Listen == "" {
		nc, err = nats.Connect("", append(opts, nats.InProcessServer(n.srv))...)
	} else {
		nc, err = nats.Connect(n.srv.ClientURL(), opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: connect: %w", err)
	}
	n.conns = append(n.conns, nc)
	return nc, nil
}

// Close drains the node's connections and shuts the server down, waiting
// until it has stopped. It is idempotent.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	conns := n.conns
	n.conns = nil
	n.mu.Unlock()
	n.watch.stop()
	close(n.storage.stop)
	<-n.storage.done
	for _, nc := range conns {
		nc.Close()
	}
	if n.stopFence != nil {
		close(n.stopFence)
		<-n.fenced
	}
	done := make(chan struct{})
	go func() {
		// In a cluster, lame duck mode: leaderships handed over, clients
		// closed (a node without a client listener skips it).
		if n.cfg.Cluster != nil {
			n.srv.LameDuckShutdown()
		}
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		for _, r := range n.relays {
			r.close()
		}
		close(done)
	}()
	select {
	case <-done:
		n.lock.Close() // the store is closed: the next node may start
		return nil
	case <-ctx.Done():
		n.srv.Shutdown() // cut the handover short
		return fmt.Errorf("cluster: shutdown: %w", ctx.Err())
	}
}
