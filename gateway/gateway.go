package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/agentcore/sessionlog/mcpserver"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/internal/ratelimit"
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
	// MaxBodyBytes bounds a request body sent to the service as one
	// request (the service bounds it too); appends and blobs up to
	// MaxUploadBytes are sent as uploads in pieces, and a blob up to it
	// is resolved into a response.
	MaxBodyBytes   int64
	MaxUploadBytes int64
	// Rate and Burst bound each caller's requests per second (by user, or
	// by remote address without Auth).
	Rate  float64
	Burst int
	// MaxUsers bounds the user connections kept open; idle ones past it
	// are closed.
	MaxUsers int
	// MaxStreams bounds the event streams open at once; of those, a
	// tenant may hold MaxStreamsPerTenant and one user MaxStreamsPerUser.
	MaxStreams, MaxStreamsPerTenant, MaxStreamsPerUser int
	// MaxAssembling bounds the replies of several pages (a context or a
	// tree larger than one NATS message, up to 64 MiB each) put together
	// at once; of those, one tenant may have MaxAssemblingPerTenant and
	// one user MaxAssemblingPerUser, so that one tenant's large reads
	// never take every turn, and a turn given back goes to the tenant
	// holding fewest. Past them a caller waits two seconds for its turn,
	// then is refused rate_limited (saying whose share was taken only when
	// it is the caller's own).
	MaxAssembling, MaxAssemblingPerTenant, MaxAssemblingPerUser int
	// StreamBuffer bounds the bytes of entries waiting for one event
	// stream's client: a client that reads slower than the session grows
	// is cut off (an error event says from where to resume) rather than
	// buffered for.
	StreamBuffer int
	// WriteTimeout bounds each write to a client (an event, a reply);
	// ReadTimeout a request's headers and body; IdleTimeout a kept-alive
	// connection between requests; MaxHeaderBytes the request headers.
	WriteTimeout, ReadTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                         int
	// MaxConns bounds the client connections open at once; the last
	// ReservedConns of them are kept for callers who authenticate (a
	// connection taken from the reserve is closed after a request that
	// did not). MaxConnsPerAddr bounds those of one source address (an
	// IPv6 /64). When room is needed idle connections are closed, those
	// that never authenticated first; past the bounds a new connection is
	// closed at once. ReadHeaderTimeout bounds the wait for a request's
	// headers, UntrustedIdleTimeout a kept-alive connection that never
	// authenticated (IdleTimeout one that did).
	// NewConnRate and NewConnBurst bound the new connections per second
	// of one source address.
	MaxConns, ReservedConns, MaxConnsPerAddr int
	NewConnRate                              float64
	NewConnBurst                             int
	ReadHeaderTimeout, UntrustedIdleTimeout  time.Duration
	// TrustedProxies are the addresses of proxies in front of the gateway
	// (a load balancer's): everybody's connections come from them, so the
	// bounds per address do not apply to them (MaxConns and the reserve
	// still do; the gateway cannot tell their clients apart at accept).
	TrustedProxies []netip.Prefix
	// LoginRate and LoginBurst bound the logins of new credentials per
	// source address; MaxLoginsInFlight those made at once;
	// RefusedLoginTTL is how long refused credentials are refused from
	// memory.
	LoginRate         float64
	LoginBurst        int
	MaxLoginsInFlight int
	RefusedLoginTTL   time.Duration
	// Heartbeat is how often an idle event stream sends a comment.
	Heartbeat time.Duration
	// RequestTimeout bounds a call to the service (waits get MaxWait on
	// top).
	RequestTimeout time.Duration
	// Ready, when set, says whether the node behind the gateway can serve
	// (GET /readyz answers 503 with its error until it does); GET /healthz
	// answers 200 while the process runs. Neither needs credentials.
	Ready func() error
	// Telemetry traces requests (continuing a caller's traceparent) and
	// carries the trace on to the service; nil: the global providers.
	Telemetry *telemetry.T
	// MCP serves the Model Context Protocol at /mcp (streamable HTTP,
	// stateless), each caller's tools on its own tenant's service; nil:
	// no /mcp.
	MCP *mcpserver.Config
}

// DefaultConfig serves on addr for the service at natsURL.
func DefaultConfig(addr, natsURL string) Config {
	return Config{
		Listen: addr, NATSURL: natsURL, Subject: api.DefaultSubject, Stream: stream.DefaultConfig(),
		MaxBodyBytes: 1 << 20, MaxUploadBytes: 64 << 20, Rate: 100, Burst: 200, MaxUsers: 1024,
		MaxAssembling: 4, MaxAssemblingPerTenant: 2, MaxAssemblingPerUser: 2, MaxStreams: 1024, MaxStreamsPerTenant: 256, MaxStreamsPerUser: 32, StreamBuffer: 1 << 20,
		Heartbeat: 15 * time.Second, RequestTimeout: 45 * time.Second,
		WriteTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second,
		MaxHeaderBytes: 16 << 10, MaxConns: 4096, ReservedConns: 512, MaxConnsPerAddr: 256,
		NewConnRate: 100, NewConnBurst: 200,
		ReadHeaderTimeout: 5 * time.Second, UntrustedIdleTimeout: 5 * time.Second,
		LoginRate: 2, LoginBurst: 20, MaxLoginsInFlight: 8, RefusedLoginTTL: 30 * time.Second,
		MCP: new(mcpserver.DefaultConfig()),
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
	case c.MaxUploadBytes < c.MaxBodyBytes:
		return fmt.Errorf("%w: MaxUploadBytes must be at least MaxBodyBytes", ErrInvalidConfig)
	case c.MaxBodyBytes < 1024 || c.Rate <= 0 || c.Burst < 1 || c.MaxUsers < 1 || c.MaxStreams < 1:
		return fmt.Errorf("%w: MaxBodyBytes (≥1 KiB), Rate, Burst, MaxUsers and MaxStreams must be positive", ErrInvalidConfig)
	case c.MaxAssembling < 1 || c.MaxAssemblingPerTenant < 1 || c.MaxAssemblingPerUser < 1:
		return fmt.Errorf("%w: MaxAssembling, MaxAssemblingPerTenant and MaxAssemblingPerUser must be positive", ErrInvalidConfig)
	case c.Heartbeat <= 0 || c.RequestTimeout <= 0:
		return fmt.Errorf("%w: Heartbeat and RequestTimeout must be positive", ErrInvalidConfig)
	case c.MaxStreamsPerTenant < 1 || c.MaxStreamsPerUser < 1 || c.StreamBuffer < 64<<10:
		return fmt.Errorf("%w: MaxStreamsPerTenant and MaxStreamsPerUser must be positive, StreamBuffer at least 64 KiB", ErrInvalidConfig)
	case c.WriteTimeout <= 0 || c.ReadTimeout <= 0 || c.IdleTimeout <= 0 || c.MaxHeaderBytes < 4<<10 || c.MaxConns < 1:
		return fmt.Errorf("%w: timeouts and MaxConns must be positive, MaxHeaderBytes at least 4 KiB", ErrInvalidConfig)
	case c.ReadHeaderTimeout <= 0 || c.UntrustedIdleTimeout <= 0:
		return fmt.Errorf("%w: ReadHeaderTimeout and UntrustedIdleTimeout must be positive", ErrInvalidConfig)
	case c.ReservedConns < 0 || c.ReservedConns >= c.MaxConns || c.MaxConnsPerAddr < 1 || c.NewConnRate <= 0 || c.NewConnBurst < 1:
		return fmt.Errorf("%w: ReservedConns must be 0 to MaxConns-1, MaxConnsPerAddr, NewConnRate and NewConnBurst positive", ErrInvalidConfig)
	case c.LoginRate <= 0 || c.LoginBurst < 1 || c.MaxLoginsInFlight < 1 || c.RefusedLoginTTL <= 0:
		return fmt.Errorf("%w: login bounds must be positive", ErrInvalidConfig)
	}
	return c.Stream.Validate()
}

// Gateway is a running HTTP gateway.
type Gateway struct {
	cfg     Config
	ln      net.Listener
	srv     *http.Server
	guard   *connGuard
	streams *streamCounts
	logins  *logins
	// assembling holds a token for each reply of several pages being put
	// together (Config.MaxAssembling).
	assembling *shares

	ctx    context.Context // cancelled by Close: ends event streams, refuses new requests
	cancel context.CancelFunc
	// reqCtx is the requests' base context: cancelled only once Close's
	// grace for requests in flight is over, so that an append under way
	// when the server is told to stop is answered with its outcome.
	reqCtx context.Context
	cutoff context.CancelFunc
	wg     sync.WaitGroup
	limits *ratelimit.Keyed // callers' buckets (safe for concurrent use)

	mu      sync.Mutex
	users   *lru.Cache[[32]byte, *userConn]
	closed  bool
	serrErr error
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
	guard := newConnGuard(cfg)
	ln = &guardListener{Listener: ln, g: guard}
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
	rctx, cutoff := context.WithCancel(context.WithoutCancel(ctx))
	g := &Gateway{
		cfg: cfg, ln: ln, guard: guard, assembling: newShares(cfg.MaxAssembling, cfg.MaxAssemblingPerTenant, cfg.MaxAssemblingPerUser), streams: newStreamCounts(cfg), logins: newLogins(cfg),
		ctx: gctx, cancel: cancel, reqCtx: rctx, cutoff: cutoff,
		users: lru.New[[32]byte, *userConn](), limits: ratelimit.NewKeyed(cfg.Rate, cfg.Burst),
	}
	// No WriteTimeout for the whole response: event streams and waits
	// last long; handlers set a deadline for each write instead.
	g.srv = &http.Server{
		Handler:           g.routes(),
		ReadHeaderTimeout: min(cfg.ReadHeaderTimeout, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return rctx },
		ConnState:         guard.state,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, guarded(c))
		},
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

// Streams is the number of event streams open.
func (g *Gateway) Streams() int { return g.streams.open() }

// URL is the gateway's base URL.
func (g *Gateway) URL() string {
	scheme := "http"
	if g.cfg.CertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + g.ln.Addr().String()
}

// shutdownGrace bounds how long Close waits for requests in flight.
const shutdownGrace = 5 * time.Second

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
	// Whatever clients do, closing takes at most the caller's deadline,
	// or shutdownGrace without one: then connections are cut.
	sctx, cancel := context.WithTimeout(ctx, shutdownGrace)
	defer cancel()
	err := g.srv.Shutdown(sctx)
	if err != nil {
		g.cutoff() // the grace is over: requests still in flight end, answered as of unknown outcome
		err = g.srv.Close()
	}
	g.cutoff()
	g.wg.Wait()
	var done []*nats.Conn
	g.mu.Lock()
	for k, u := range g.users.All() {
		done = append(done, u.nc)
		g.users.Remove(k)
	}
	err = errors.Join(err, g.serrErr)
	g.mu.Unlock()
	closeConns(done)
	return err
}

// admit is how every route takes a caller: its connection (by its
// credentials), then its rate. ok false: the answer is written. release
// gives the connection back.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request) (u *userConn, release func(), ok bool) {
	u, release, err := g.user(r)
	if err != nil {
		writeError(w, err, 0)
		return nil, nil, false
	}
	g.guard.trust(r.Context())
	if g.limited(w, u) {
		release()
		return nil, nil, false
	}
	return u, release, true
}

// limited answers 429 when the caller is past its rate. It is called
// once the caller is authenticated: a stranger using a user's name
// spends nothing of that user's budget.
func (g *Gateway) limited(w http.ResponseWriter, u *userConn) bool {
	now := time.Now()
	wait, ok := ratelimit.Take(g.limits.Reserve(u.rateKey, now), now)
	if !ok {
		writeError(w, &api.Error{Code: api.CodeRateLimited, Message: "too many requests", RetryAfterMs: max(1, wait.Milliseconds())}, 0)
	}
	return !ok
}
