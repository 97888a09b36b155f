// Package gateway serves the sessionlog protocol over HTTP/JSON for
// clients without NATS, with a server-sent-events stream of a session's
// new entries. It is a NATS client like any other: each HTTP user's
// requests travel on a connection made with that user's own credentials
// (HTTP Basic), so the NATS server — not the gateway — decides which
// tenant's sessions they reach.
package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/internal/ratelimit"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/telemetry"
)

var (
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("gateway: invalid config")
	// ErrClosed is returned for requests after Close.
	ErrClosed = errors.New("gateway: closed")
)

// Config configures a gateway.
type Config struct {
	// Listen is the HTTP address ("127.0.0.1:8080"; port 0: any).
	Listen string
	// NATSURL is where the sessionlog service is reached.
	NATSURL string
	// Auth requires HTTP Basic credentials, used as the NATS user and
	// password of the caller's own connection. Without it every request
	// shares one anonymous connection.
	Auth bool
	// NATSOptions are added to every connection (TLS roots, say).
	NATSOptions []nats.Option
	// Subject is the service's subject prefix; Stream says where the
	// events stream reads.
	Subject string
	Stream  stream.Config
	// CertFile and KeyFile serve HTTPS.
	CertFile, KeyFile string
	// MaxBodyBytes bounds a request body (the service bounds it too).
	MaxBodyBytes int64
	// Rate and Burst bound each caller's requests per second (by user, or
	// by remote address without Auth).
	Rate  float64
	Burst int
	// MaxUsers bounds the user connections kept open; idle ones past it
	// are closed.
	MaxUsers int
	// MaxStreams bounds the event streams open at once.
	MaxStreams int
	// Heartbeat is how often an idle event stream sends a comment.
	Heartbeat time.Duration
	// RequestTimeout bounds a call to the service (waits get MaxWait on
	// top).
	RequestTimeout time.Duration
	// Telemetry traces requests (continuing a caller's traceparent) and
	// carries the trace on to the service; nil: the global providers.
	Telemetry *telemetry.T
}

// DefaultConfig serves on addr for the service at natsURL.
func DefaultConfig(addr, natsURL string) Config {
	return Config{
		Listen: addr, NATSURL: natsURL, Subject: "sessionlog.v1", Stream: stream.DefaultConfig(),
		MaxBodyBytes: 1 << 20, Rate: 100, Burst: 200, MaxUsers: 1024, MaxStreams: 256,
		Heartbeat: 15 * time.Second, RequestTimeout: 45 * time.Second,
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Listen == "":
		return fmt.Errorf("%w: Listen is required", ErrInvalidConfig)
	case c.NATSURL == "":
		return fmt.Errorf("%w: NATSURL is required", ErrInvalidConfig)
	case c.Subject == "":
		return fmt.Errorf("%w: Subject is required", ErrInvalidConfig)
	case (c.CertFile == "") != (c.KeyFile == ""):
		return fmt.Errorf("%w: HTTPS needs both CertFile and KeyFile", ErrInvalidConfig)
	case c.MaxBodyBytes < 1024 || c.Rate <= 0 || c.Burst < 1 || c.MaxUsers < 1 || c.MaxStreams < 1:
		return fmt.Errorf("%w: MaxBodyBytes (≥1 KiB), Rate, Burst, MaxUsers and MaxStreams must be positive", ErrInvalidConfig)
	case c.Heartbeat <= 0 || c.RequestTimeout <= 0:
		return fmt.Errorf("%w: Heartbeat and RequestTimeout must be positive", ErrInvalidConfig)
	}
	return c.Stream.Validate()
}

// Gateway is a running HTTP gateway.
type Gateway struct {
	cfg     Config
	ln      net.Listener
	srv     *http.Server
	streams chan struct{}

	ctx    context.Context // cancelled by Close: ends event streams
	cancel context.CancelFunc
	wg     sync.WaitGroup
	limits *ratelimit.Keyed // callers' buckets (safe for concurrent use)

	mu      sync.Mutex
	users   map[[32]byte]*userConn
	tick    uint64
	closed  bool
	serrErr error
}

// userConn is one caller's NATS connection.
type userConn struct {
	key  [32]byte
	nc   *nats.Conn
	c    *service.Client
	refs int
	used uint64
}

// Start listens and serves until Close.
func Start(ctx context.Context, cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.Default()
	}
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g := &Gateway{
		cfg: cfg, ln: ln, streams: make(chan struct{}, cfg.MaxStreams),
		ctx: gctx, cancel: cancel,
		users: map[[32]byte]*userConn{}, limits: ratelimit.NewKeyed(cfg.Rate, cfg.Burst),
	}
	g.srv = &http.Server{
		Handler:           g.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return gctx },
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := g.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.mu.Lock()
			g.serrErr = err
			g.mu.Unlock()
		}
	}()
	return g, nil
}

// URL is the gateway's base URL.
func (g *Gateway) URL() string {
	scheme := "http"
	if g.cfg.CertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + g.ln.Addr().String()
}

// Close stops serving, ends event streams, waits for handlers and closes
// the user connections. It is idempotent.
func (g *Gateway) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	err := g.srv.Shutdown(ctx)
	g.wg.Wait()
	g.mu.Lock()
	for k, u := range g.users {
		u.nc.Close()
		delete(g.users, k)
	}
	err = errors.Join(err, g.serrErr)
	g.mu.Unlock()
	return err
}

// errUnauthorized is answered with 401.
var errUnauthorized = errors.New("gateway: credentials refused")

// user returns the caller's connection (made on first use); release it
// when done.
func (g *Gateway) user(r *http.Request) (*userConn, func(), error) {
	var opts []nats.Option
	var key [32]byte
	if g.cfg.Auth {
		name, pw, ok := r.BasicAuth()
		if !ok {
			return nil, nil, fmt.Errorf("%w: HTTP Basic credentials required", errUnauthorized)
		}
		key = sha256.Sum256([]byte(name + "\x00" + pw))
		opts = append(opts, nats.UserInfo(name, pw))
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, nil, ErrClosed
	}
	g.tick++
	if u := g.users[key]; u != nil && u.nc.IsConnected() {
		u.refs++
		u.used = g.tick
		g.mu.Unlock()
		return u, func() { g.release(u) }, nil
	}
	g.mu.Unlock()
	nc, err := g.connect(r.Context(), opts...)
	if err != nil {
		return nil, nil, err
	}
	u := &userConn{key: key, nc: nc, c: service.NewClient(nc, g.cfg.Subject, service.WithClientTelemetry(g.cfg.Telemetry)), refs: 1}
	g.mu.Lock()
	if old := g.users[key]; old != nil && old.refs == 0 {
		old.nc.Close()
	}
	u.used = g.tick
	g.users[key] = u
	g.evict()
	g.mu.Unlock()
	return u, func() { g.release(u) }, nil
}

func (g *Gateway) connect(ctx context.Context, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name("sessionlog-gateway"), nats.MaxReconnects(-1), nats.Timeout(5 * time.Second)}, opts...)
	opts = append(opts, g.cfg.NATSOptions...)
	nc, err := nats.Connect(g.cfg.NATSURL, opts...)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
		return nil, fmt.Errorf("%w: %v", errUnauthorized, err)
	}
	if err != nil {
		return nil, &service.Error{Code: service.CodeUnavailable, Message: "cannot reach NATS: " + err.Error()}
	}
	return nc, nil
}

func (g *Gateway) release(u *userConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	u.refs--
	if u.refs == 0 && g.users[u.key] != u {
		u.nc.Close() // replaced while in use (it had lost its server)
	}
	g.evict()
}

// evict closes idle connections past MaxUsers, least recently used first.
// Called with mu held.
func (g *Gateway) evict() {
	for len(g.users) > g.cfg.MaxUsers {
		var victim [32]byte
		var oldest *userConn
		for k, u := range g.users {
			if u.refs == 0 && (oldest == nil || u.used < oldest.used) {
				victim, oldest = k, u
			}
		}
		if oldest == nil {
			return
		}
		oldest.nc.Close()
		delete(g.users, victim)
	}
}

// allow takes a token from the caller's bucket: by user with Auth, else
// by remote address.
func (g *Gateway) allow(r *http.Request) (time.Duration, bool) {
	key := "addr:" + r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		key = "addr:" + host
	}
	if name, _, ok := r.BasicAuth(); ok && g.cfg.Auth {
		key = "user:" + name
	}
	now := time.Now()
	return ratelimit.Take(g.limits.Reserve(key, now), now)
}

// limited answers 429 when the caller is past its rate.
func (g *Gateway) limited(w http.ResponseWriter, r *http.Request) bool {
	wait, ok := g.allow(r)
	if !ok {
		writeError(w, &service.Error{Code: service.CodeRateLimited, Message: "too many requests", RetryAfterMs: max(1, wait.Milliseconds())}, 0)
	}
	return !ok
}
