package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/ratelimit"
)

// Credentials are checked by the NATS server when a caller's connection
// is made; the gateway keeps each caller's connection, keyed by a hash of
// name and password, so a caller it knows costs nothing to recognise. A
// caller it does not know costs a connection — and, with a bcrypt
// password, ~100 ms of the server's CPU — so new logins are bounded: per
// source address (a rate), in all (a few at a time), and a refused pair
// is answered from memory for a while without asking the server again.
// None of this touches a real user's request budget, which is spent only
// once the caller is authenticated.

// errUnauthorized is answered with 401.
var errUnauthorized = errors.New("gateway: credentials refused")

// Bounds of HTTP Basic credentials: longer ones are refused unread by
// the server.
const (
	maxUserLen     = 256
	maxPasswordLen = 1024
)

// userConn is one caller's NATS connection.
type userConn struct {
	key     [32]byte
	nc      *nats.Conn
	c       *api.Client
	refs    int
	rateKey string // what the caller's request budget is kept under
	name    string // the user name ("" without Auth)

	tenantOnce sync.Once
	tenant     string // the tenant the service announces to this caller

	mcpOnce sync.Once
	mcp     *mcp.Server // the caller's MCP server (mcp.go), nil if it could not be made
}

// logins bounds the attempts to log in that reach the NATS server.
type logins struct {
	perSource *ratelimit.Keyed
	inFlight  chan struct{}
	refused   *expirable.LRU[[32]byte, struct{}]
}

func newLogins(cfg Config) *logins {
	return &logins{
		perSource: ratelimit.NewKeyed(cfg.LoginRate, cfg.LoginBurst),
		inFlight:  make(chan struct{}, cfg.MaxLoginsInFlight),
		refused:   expirable.NewLRU[[32]byte, struct{}](4096, nil, cfg.RefusedLoginTTL),
	}
}

// sourceOf is the caller's address without the port.
func sourceOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// user authenticates the caller and returns its connection (made on first
// use); release it when done.
func (g *Gateway) user(r *http.Request) (*userConn, func(), error) {
	var opts []nats.Option
	var key [32]byte
	name, rateKey := "", "addr:"+sourceOf(r)
	if g.cfg.Auth {
		n, pw, ok := r.BasicAuth()
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%w: HTTP Basic credentials required", errUnauthorized)
		case len(n) > maxUserLen || len(pw) > maxPasswordLen:
			return nil, nil, fmt.Errorf("%w: user name or password too long (at most %d and %d bytes)", errUnauthorized, maxUserLen, maxPasswordLen)
		}
		key = sha256.Sum256([]byte(n + "\x00" + pw))
		opts = append(opts, nats.UserInfo(n, pw))
		name, rateKey = n, "user:"+n
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, nil, ErrClosed
	}
	if u, ok := g.users.Get(key); ok && u.nc.IsConnected() {
		u.refs++
		g.mu.Unlock()
		return u, func() { g.release(u) }, nil
	}
	g.mu.Unlock()
	nc, err := g.login(r, key, opts)
	if err != nil {
		return nil, nil, err
	}
	u := &userConn{key: key, nc: nc, c: api.NewClient(nc, g.cfg.Subject, api.WithPropagator(g.cfg.Telemetry.Propagator())),
		refs: 1, rateKey: rateKey, name: name}
	var done []*nats.Conn
	g.mu.Lock()
	if old, ok := g.users.Peek(key); ok && old.refs == 0 {
		done = append(done, old.nc)
	}
	g.users.Put(key, u)
	done = append(done, g.evict()...)
	g.mu.Unlock()
	closeConns(done)
	return u, func() { g.release(u) }, nil
}

// login makes a new connection for credentials not yet known, within the
// login bounds.
func (g *Gateway) login(r *http.Request, key [32]byte, opts []nats.Option) (*nats.Conn, error) {
	if g.cfg.Auth {
		if _, ok := g.logins.refused.Get(key); ok {
			return nil, fmt.Errorf("%w (refused a moment ago)", errUnauthorized)
		}
		now := time.Now()
		if wait, ok := ratelimit.Take(g.logins.perSource.Reserve("login:"+sourceOf(r), now), now); !ok {
			return nil, &api.Error{Code: api.CodeRateLimited, Message: "too many logins from this address", RetryAfterMs: max(1, wait.Milliseconds())}
		}
	}
	select {
	case g.logins.inFlight <- struct{}{}:
		defer func() { <-g.logins.inFlight }()
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	nc, err := g.connect(r.Context(), opts...)
	if errors.Is(err, errUnauthorized) {
		g.logins.refused.Add(key, struct{}{})
	}
	return nc, err
}

func (g *Gateway) connect(ctx context.Context, opts ...nats.Option) (*nats.Conn, error) {
	opts = append(append(cluster.ClientOptions("sessionlog-gateway"), nats.Timeout(5*time.Second)), opts...)
	opts = append(opts, g.cfg.NATSOptions...)
	nc, err := nats.Connect(g.cfg.NATSURL, opts...)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
		return nil, fmt.Errorf("%w: %v", errUnauthorized, err)
	}
	if err != nil {
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "cannot reach NATS: " + err.Error()}
	}
	return nc, nil
}

func (g *Gateway) release(u *userConn) {
	var done []*nats.Conn
	g.mu.Lock()
	u.refs--
	if cur, _ := g.users.Peek(u.key); u.refs == 0 && cur != u {
		done = append(done, u.nc) // replaced while in use (it had lost its server)
	}
	done = append(done, g.evict()...)
	g.mu.Unlock()
	closeConns(done)
}

// evict takes idle connections past MaxUsers out, least recently used
// first, for the caller to close once it lets go of mu (closing drains,
// which is network I/O). Called with mu held.
func (g *Gateway) evict() []*nats.Conn {
	var out []*nats.Conn
	for _, u := range g.users.Trim(g.cfg.MaxUsers, func(_ [32]byte, u *userConn) bool { return u.refs == 0 }) {
		out = append(out, u.nc)
	}
	return out
}

// closeConns closes connections taken out of the pool.
func closeConns(conns []*nats.Conn) {
	for _, nc := range conns {
		nc.Close()
	}
}

// tenantOf asks the service, on the caller's own connection, which tenant
// it serves that caller ($SRV.INFO metadata): the caller's tenant, since
// a connection reaches only its own account's service. "" without
// tenants. Asked once per connection; if it cannot be told, the caller
// counts as a tenant of its own.
func (g *Gateway) tenantOf(u *userConn) string {
	u.tenantOnce.Do(func() {
		u.tenant = "user:" + u.name
		m, err := u.nc.Request("$SRV.INFO."+serviceName, nil, 2*time.Second)
		if err != nil {
			return
		}
		var info struct {
			Metadata map[string]string `json:"metadata"`
		}
		if json.Unmarshal(m.Data, &info) == nil {
			u.tenant = info.Metadata["tenant"]
		}
	})
	return u.tenant
}

// serviceName is the micro service's name (service.DefaultConfig).
const serviceName = "sessionlog"
