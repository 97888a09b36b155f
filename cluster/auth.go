package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// AuthConfig turns on authentication: every client must present the
// credentials of a user of some tenant. Each tenant is a NATS account of
// its own, with its own JetStream: its streams, consumers and subjects
// exist only inside it, so no credentials of one tenant can name, read,
// list, write or subscribe to another's sessions — the server enforces it,
// whatever any client or service code does.
type AuthConfig struct {
	Tenants []Tenant `json:"tenants"`
	// ClientPermissions are what every tenant user may do inside its own
	// account (the service's subjects, read-only JetStream, …); the
	// sessionlog service in the account is not restricted. Set by the
	// caller that knows the subjects (see service.ClientPermissions).
	ClientPermissions Permissions `json:"-"`
	// MaxConnectionsPerTenant bounds the connections of each tenant that
	// sets no MaxConnections of its own (0: DefaultMaxConnectionsPerTenant,
	// or a quarter of the node's Config.MaxConnections if that is less), so
	// that no tenant can take the node's descriptors from the others.
	MaxConnectionsPerTenant int `json:"-"`
	// EdgePermissions are what an edge's link may carry, given its
	// domain: set by the caller that knows the subjects
	// (service.EdgePermissions). Nil: tenants may have no edges.
	EdgePermissions func(domain string) Permissions `json:"-"`
}

// DefaultMaxConnectionsPerTenant is a tenant's bound on connections to a
// node when neither it nor AuthConfig says otherwise.
const DefaultMaxConnectionsPerTenant = 1024

// Tenant is one account.
type Tenant struct {
	// Name names the account: letters, digits, '-' and '_'.
	Name  string `json:"name"`
	Users []User `json:"users"`
	// MaxStore bounds the tenant's JetStream file storage in bytes (0: no
	// limit of its own).
	MaxStore int64 `json:"maxStore,omitempty"`
	// Edges are the tenant's edge nodes (machines linked as leafnodes):
	// each signs in with its own credentials, and its link may carry only
	// what a hub's sourcing of that edge's domain and the edge's link
	// request need (AuthConfig.EdgePermissions).
	Edges []Edge `json:"edges,omitempty"`
	// MaxConnections bounds the tenant's connections to one node (0:
	// AuthConfig.MaxConnectionsPerTenant), the node's own two connections
	// in the account and those the HTTP gateway makes for its users
	// among them.
	MaxConnections int `json:"maxConnections,omitempty"`
}

// Edge is one edge node of a tenant: its JetStream domain, and the
// credentials its link signs in with (a user and password, or an nkey).
// Removing it from the file and restarting the hub revokes it.
type Edge struct {
	Domain   string `json:"domain"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	NKey     string `json:"nkey,omitempty"`
}

// User is one set of credentials: a name and password (plain, or a bcrypt
// hash "$2a$…"), or a public user nkey ("U…") whose seed the client keeps.
type User struct {
	Name     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	NKey     string `json:"nkey,omitempty"`
}

// Permissions are subjects a user may publish and subscribe to.
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// TLSConfig serves clients over TLS.
type TLSConfig struct {
	CertFile string
	KeyFile  string
	// CAFile, with VerifyClients, requires client certificates signed by
	// it; it also lets the node's own connections verify the server.
	CAFile        string
	VerifyClients bool
}

var tenantRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate checks the tenants, their users and the client permissions
// (which must be set: an empty allow list would allow everything).
func (a *AuthConfig) Validate() error {
	if len(a.ClientPermissions.Publish) == 0 || len(a.ClientPermissions.Subscribe) == 0 {
		return fmt.Errorf("%w: auth needs client permissions to publish and subscribe", ErrInvalidConfig)
	}
	return a.CheckTenants()
}

// CheckTenants checks the tenants and their users alone (Validate also
// wants the client permissions, which the caller sets later).
func (a *AuthConfig) CheckTenants() error {
	if len(a.Tenants) == 0 {
		return fmt.Errorf("%w: auth without tenants would let nobody in", ErrInvalidConfig)
	}
	tenants, names, keys, domains := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, t := range a.Tenants {
		where := fmt.Sprintf("tenants[%d]", i)
		switch {
		case !tenantRE.MatchString(t.Name):
			return fmt.Errorf("%w: %s: name %q must be 1-64 letters, digits, '-' or '_'", ErrInvalidConfig, where, t.Name)
		case strings.EqualFold(t.Name, "SYS") || strings.HasPrefix(t.Name, "$"):
			return fmt.Errorf("%w: %s: name %q is reserved", ErrInvalidConfig, where, t.Name)
		case tenants[t.Name]:
			return fmt.Errorf("%w: %s: tenant %q appears twice", ErrInvalidConfig, where, t.Name)
		case len(t.Users) == 0:
			return fmt.Errorf("%w: tenant %q has no users", ErrInvalidConfig, t.Name)
		case t.MaxStore < 0 || t.MaxConnections < 0 || a.MaxConnectionsPerTenant < 0:
			return fmt.Errorf("%w: tenant %q has a negative limit", ErrInvalidConfig, t.Name)
		}
		tenants[t.Name] = true
		for j, e := range t.Edges {
			where := fmt.Sprintf("tenant %q edges[%d]", t.Name, j)
			switch {
			case !domainRE.MatchString(e.Domain):
				return fmt.Errorf("%w: %s: domain %q must be 1-64 letters, digits, '-' or '_'", ErrInvalidConfig, where, e.Domain)
			case domains[e.Domain]:
				return fmt.Errorf("%w: %s: domain %q appears twice", ErrInvalidConfig, where, e.Domain)
			case e.NKey != "" && (e.User != "" || e.Password != ""):
				return fmt.Errorf("%w: %s: give an nkey or a user and password, not both", ErrInvalidConfig, where)
			case e.NKey != "" && !nkeys.IsValidPublicUserKey(e.NKey):
				return fmt.Errorf("%w: %s: %q is not a public user nkey (U…)", ErrInvalidConfig, where, e.NKey)
			case e.NKey == "" && (e.User == "" || e.Password == ""):
				return fmt.Errorf("%w: %s: an edge needs a user and a password (or an nkey)", ErrInvalidConfig, where)
			case strings.ContainsFunc(e.User+e.Password, func(r rune) bool { return r < ' ' || r == 0x7f }):
				return fmt.Errorf("%w: %s: control characters in user or password", ErrInvalidConfig, where)
			case e.User != "" && names[e.User], e.NKey != "" && keys[e.NKey]:
				return fmt.Errorf("%w: %s: credentials used twice", ErrInvalidConfig, where)
			}
			domains[e.Domain] = true
			if e.User != "" {
				names[e.User] = true
			} else {
				keys[e.NKey] = true
			}
		}
		for j, u := range t.Users {
			where := fmt.Sprintf("tenant %q users[%d]", t.Name, j)
			switch {
			case u.NKey != "" && (u.Name != "" || u.Password != ""):
				return fmt.Errorf("%w: %s: give an nkey or a user and password, not both", ErrInvalidConfig, where)
			case u.NKey != "":
				if !nkeys.IsValidPublicUserKey(u.NKey) {
					return fmt.Errorf("%w: %s: %q is not a public user nkey (U…)", ErrInvalidConfig, where, u.NKey)
				}
				if keys[u.NKey] {
					return fmt.Errorf("%w: %s: nkey used twice", ErrInvalidConfig, where)
				}
				keys[u.NKey] = true
			case u.Name == "" || u.Password == "":
				return fmt.Errorf("%w: %s: a user needs a name and a password (or an nkey)", ErrInvalidConfig, where)
			case strings.ContainsFunc(u.Name+u.Password, func(r rune) bool { return r < ' ' || r == 0x7f }):
				return fmt.Errorf("%w: %s: control characters in user or password", ErrInvalidConfig, where)
			case names[u.Name]:
				return fmt.Errorf("%w: %s: user %q appears twice (users are global, not per tenant)", ErrInvalidConfig, where, u.Name)
			default:
				names[u.Name] = true
			}
		}
	}
	return nil
}

// serviceKeys are the node's own credentials in each tenant's account,
// made fresh at every start and never written anywhere.
type serviceKeys map[string]tenantKeys

// tenantKeys are two users: store may do anything in the account (it
// writes the stream, index and snapshots); responder, which answers
// clients' requests, may publish only to inboxes — so a reply subject a
// client chose can never be a stored subject, whatever the code does.
type tenantKeys struct {
	store, responder nkeys.KeyPair
}

// ReplySubjects are the only subjects a node's responding connection may
// publish to: the inboxes clients receive replies on (every NATS client
// library's default prefix, and the only one tenant users may subscribe
// to).
const ReplySubjects = "_INBOX.>"

// accountsConfig is the accounts block in nats-server's configuration
// language, parsed by the server itself (JetStream per account has no
// other public switch).
func (a *AuthConfig) accountsConfig(keys serviceKeys, nodeMax int) (string, error) {
	perTenant := a.MaxConnectionsPerTenant
	if perTenant == 0 {
		perTenant = DefaultMaxConnectionsPerTenant
		if nodeMax > 0 {
			perTenant = max(8, min(perTenant, nodeMax/4))
		}
	}
	q := confQuote
	list := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = q(s)
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	perms := fmt.Sprintf("permissions: { publish: { allow: %s }, subscribe: { allow: %s } }",
		list(a.ClientPermissions.Publish), list(a.ClientPermissions.Subscribe))
	var b strings.Builder
	b.WriteString("accounts {\n")
	for _, t := range a.Tenants {
		fmt.Fprintf(&b, "  %s {\n", q(t.Name))
		if t.MaxStore > 0 {
			fmt.Fprintf(&b, "    jetstream { max_file: %d, max_mem: 0 }\n", t.MaxStore)
		} else {
			b.WriteString("    jetstream: enabled\n")
		}
		limit := t.MaxConnections
		if limit == 0 {
			limit = perTenant
		}
		fmt.Fprintf(&b, "    limits { max_connections: %d }\n", limit)
		b.WriteString("    users: [\n")
		for _, u := range t.Users {
			if u.NKey != "" {
				fmt.Fprintf(&b, "      { nkey: %s, %s }\n", q(u.NKey), perms)
			} else {
				fmt.Fprintf(&b, "      { user: %s, password: %s, %s }\n", q(u.Name), q(u.Password), perms)
			}
		}
		for _, e := range t.Edges {
			if a.EdgePermissions == nil {
				return "", fmt.Errorf("%w: tenant %q has edges, and this node takes none", ErrInvalidConfig, t.Name)
			}
			ep := a.EdgePermissions(e.Domain)
			eperms := fmt.Sprintf("permissions: { publish: { allow: %s }, subscribe: { allow: %s } }", list(ep.Publish), list(ep.Subscribe))
			if e.NKey != "" {
				fmt.Fprintf(&b, "      { nkey: %s, %s }\n", q(e.NKey), eperms)
			} else {
				fmt.Fprintf(&b, "      { user: %s, password: %s, %s }\n", q(e.User), q(e.Password), eperms)
			}
		}
		pub, err := keys[t.Name].store.PublicKey()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "      { nkey: %s }\n", q(pub))
		rpub, err := keys[t.Name].responder.PublicKey()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "      { nkey: %s, permissions: { publish: { allow: %s } } }\n", q(rpub), list([]string{ReplySubjects}))
		b.WriteString("    ]\n  }\n")
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// confQuote quotes s for the configuration parser, which knows only the
// escapes \\ and \" (control characters are refused by Validate; subject
// lists come from code).
func confQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func newServiceKeys(a *AuthConfig) (serviceKeys, error) {
	keys := serviceKeys{}
	for _, t := range a.Tenants {
		var tk tenantKeys
		for _, kp := range []*nkeys.KeyPair{&tk.store, &tk.responder} {
			var err error
			if *kp, err = nkeys.CreateUser(); err != nil {
				return nil, fmt.Errorf("cluster: service key: %w", err)
			}
		}
		keys[t.Name] = tk
	}
	return keys, nil
}

// applyAuth adds accounts, users and TLS to the server options.
func applyAuth(opts *server.Options, cfg Config) (serviceKeys, error) {
	var keys serviceKeys
	if cfg.Auth != nil {
		var err error
		if keys, err = newServiceKeys(cfg.Auth); err != nil {
			return nil, err
		}
		conf, err := cfg.Auth.accountsConfig(keys, cfg.MaxConnections)
		if err != nil {
			return nil, err
		}
		if err := opts.ProcessConfigString(conf); err != nil {
			return nil, fmt.Errorf("%w: tenants: %v", ErrInvalidConfig, err)
		}
	}
	if t := cfg.TLS; t != nil {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.CertFile, KeyFile: t.KeyFile, CaFile: t.CAFile, Verify: t.VerifyClients})
		if err != nil {
			return nil, fmt.Errorf("%w: TLS: %v", ErrInvalidConfig, err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSVerify, opts.TLSTimeout = tc, true, t.VerifyClients, 2
	}
	return keys, nil
}

// clientTLS lets the node's own connections trust its certificate.
func (t *TLSConfig) clientTLS() (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, f := range []string{t.CertFile, t.CAFile} {
		if f == "" {
			continue
		}
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cluster: TLS: %w", err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ConnectTenant opens a connection inside a tenant's account with the
// node's own service credentials: what the sessionlog service of that
// tenant uses. Only nodes started with Auth have tenants.
func (n *Node) ConnectTenant(tenant string, opts ...nats.Option) (*nats.Conn, error) {
	tk, ok := n.keys[tenant]
	if !ok {
		return nil, fmt.Errorf("%w: no tenant %q on this node", ErrInvalidConfig, tenant)
	}
	return n.connectAs(tk.store, "sessionlog/"+tenant, opts)
}

// ConnectTenantResponder opens the connection a tenant's service answers
// requests on: inside the account, allowed to publish only to
// ReplySubjects. Serve the service on it and keep the store on
// ConnectTenant's connection.
func (n *Node) ConnectTenantResponder(tenant string, opts ...nats.Option) (*nats.Conn, error) {
	tk, ok := n.keys[tenant]
	if !ok {
		return nil, fmt.Errorf("%w: no tenant %q on this node", ErrInvalidConfig, tenant)
	}
	return n.connectAs(tk.responder, "sessionlog/"+tenant+"/responder", opts)
}

// TenantOwners are the users of the node's own connections in a tenant's
// account (public nkeys): what the service does not count as a client.
func (n *Node) TenantOwners(tenant string) []string {
	tk, ok := n.keys[tenant]
	if !ok {
		return nil
	}
	var out []string
	for _, kp := range []nkeys.KeyPair{tk.store, tk.responder} {
		if pub, err := kp.PublicKey(); err == nil {
			out = append(out, pub)
		}
	}
	return out
}

func (n *Node) connectAs(kp nkeys.KeyPair, name string, opts []nats.Option) (*nats.Conn, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return n.Connect(append([]nats.Option{nats.Nkey(pub, kp.Sign), nats.Name(name)}, opts...)...)
}
