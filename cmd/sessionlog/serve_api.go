package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/host"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/upkeep"
	"github.com/agentcore/sessionlog/telemetry"
	"github.com/agentcore/sessionlog/tenants"
)

// apiFlags configure what `serve` offers clients besides NATS itself: the
// request/reply service, the HTTP gateway, credentials and TLS.
type apiFlags struct {
	// diskWarn is the free percentage of the data dir's file system
	// below which status warns.
	diskWarn   float64
	http       string
	tenants    string
	tenantFile *tenants.File // read from tenants
	tlsCert    string
	tlsKey     string
	tlsCA      string
	tlsVerify  bool
	rate       float64
	maxRequest int
	maxUpload  int
	blobGC     time.Duration
	// retention, when set, is the deployment's policy, run every
	// retentionEvery by one node at a time.
	retentionFile  string
	retentionEvery time.Duration
	retention      *lifecycle.Policy
	search         bool
	// httpConns, httpReserved and httpPerAddr bound the gateway's client
	// connections (gateway.Config.MaxConns and the rest).
	httpConns, httpReserved, httpPerAddr int
	httpProxies                          string
	// tenantConns bounds each tenant's NATS connections to the node
	// (cluster.AuthConfig.MaxConnectionsPerTenant); files shares the
	// process's descriptors.
	tenantConns int
	files       fileBudget
	// cacheBytes and writeRate bound each tenant's sessions held open and
	// the bytes it writes a second (service.Config.MaxCachedBytes,
	// Limits.TenantWriteBytes); memoryLimit is the process's soft limit.
	cacheBytes  int64
	writeRate   float64
	memoryLimit int64
	// domain, leafListen and hub make the node a hub for edge nodes or an
	// edge of one (serve_edge.go).
	domain, leafListen, hub, hubCredentials string
	// fromHub is which of the hub's sessions an edge copies (all, none);
	// redaction what every entry of the data dir went through.
	fromHub      string
	hubBandwidth int64
	// syncOnly and keepLocal choose which sessions made on an edge go
	// to the hub (stream.SyncRules).
	syncOnly, keepLocal string
	redaction           []byte // JSON
	// repairStuck and repairDead configure replica repair (0: none).
	repairStuck, repairDead time.Duration
	log                     io.Writer
}

func addAPIFlags(fs *flag.FlagSet) *apiFlags {
	a := &apiFlags{}
	fs.StringVar(&a.http, "http", "127.0.0.1:8080", `HTTP/JSON gateway address ("" to serve none; port 0: any free port)`)
	fs.StringVar(&a.tenants, "tenants", "", "JSON file of tenants and their users: require credentials, one NATS account per tenant")
	fs.StringVar(&a.tlsCert, "tls-cert", "", "serve NATS and HTTP over TLS with this certificate (PEM)")
	fs.StringVar(&a.tlsKey, "tls-key", "", "key of -tls-cert (PEM)")
	fs.StringVar(&a.tlsCA, "tls-ca", "", "CA (PEM) that signs client certificates, with -tls-verify")
	fs.BoolVar(&a.tlsVerify, "tls-verify", false, "require NATS client certificates signed by -tls-ca")
	fs.Float64Var(&a.rate, "rate", 200, "requests per second allowed to each client (service and gateway)")
	fs.Float64Var(&a.diskWarn, "disk-warn", 10, "status warns when less than this percentage of the data dir's file system is free")
	fs.IntVar(&a.maxRequest, "max-request", 1<<20, "largest request body in bytes")
	fs.IntVar(&a.maxUpload, "max-upload", 64<<20, "largest entry, or blob, sent in pieces (bytes)")
	fs.DurationVar(&a.blobGC, "blob-gc", time.Hour, "how often blobs no entry names and snapshot objects no head names are collected (past their grace period; 0: never)")
	fs.StringVar(&a.retentionFile, "retention", "", `retention policy (JSON: {"maxIdle":"720h","maxAge":"","maxSessions":0,"archive":true}) run by one node at a time; archives go to the object store `+lifecycle.ArchiveBucket)
	fs.DurationVar(&a.retentionEvery, "retention-every", time.Hour, "how often the retention policy runs")
	fs.DurationVar(&a.repairStuck, "repair-stuck", time.Minute, "in a cluster, repair a stream replica behind its leader this long while the leader takes writes: a change of leader, then a fresh replica (0: never)")
	fs.DurationVar(&a.repairDead, "repair-dead", 10*time.Minute, "in a cluster, replace a stream replica whose node has been offline this long with one on a node outside its peer set, where there is one (0: never)")
	dg := gateway.DefaultConfig("", "")
	fs.IntVar(&a.httpConns, "http-max-conns", dg.MaxConns, "HTTP client connections open at once (idle ones are closed to make room)")
	fs.IntVar(&a.httpReserved, "http-reserved-conns", dg.ReservedConns, "of -http-max-conns, those only callers with valid credentials (or, without -tenants, API requests) may take")
	fs.IntVar(&a.httpPerAddr, "http-conns-per-addr", dg.MaxConnsPerAddr, "HTTP client connections of one source address (IPv6: one /64)")
	fs.StringVar(&a.httpProxies, "http-trusted-proxies", "", "comma-separated addresses or CIDRs of proxies in front of the gateway (a load balancer): the bounds per address do not apply to them")
	fs.IntVar(&a.tenantConns, "tenant-max-conns", 0, fmt.Sprintf("NATS connections of each tenant without maxConnections in the tenants file (0: %d, or a quarter of what the descriptor limit leaves NATS if less)", cluster.DefaultMaxConnectionsPerTenant))
	ds := service.DefaultConfig(system.Config())
	fs.Int64Var(&a.cacheBytes, "session-cache", ds.MaxCachedBytes, "bytes of each tenant's sessions kept open between requests (a session larger is opened again from its snapshot for each request)")
	fs.Float64Var(&a.writeRate, "tenant-write-rate", ds.Limits.TenantWriteBytes, "bytes a second each tenant may write (appends, uploads, blobs); more are refused rate_limited with when to retry")
	fs.Int64Var(&a.memoryLimit, "memory-limit", 0, "the process's soft memory limit in bytes: the collector works harder as the heap nears it (0: $GOMEMLIMIT, else half the machine's memory, at most 8 GiB)")
	fs.StringVar(&a.domain, "domain", "", "this node's JetStream domain (a hub's and each edge's own; required with -hub and -leaf-listen)")
	fs.StringVar(&a.leafListen, "leaf-listen", "", "accept edge nodes' links at this address (0.0.0.0:7422): with -tenants an edge signs in as a tenant's user, and its sessions are taken into that tenant's")
	fs.StringVar(&a.hub, "hub", "", "run as an edge node of this hub (nats-leaf://host:7422, comma-separated): writes are stored here, online or not, and reach the hub when the link is up")
	fs.StringVar(&a.fromHub, "from-hub", "all", "with -hub: which of the tenant's sessions at the hub this edge keeps a copy of, readable offline: all, or none")
	fs.StringVar(&a.syncOnly, "sync-only", "", "with -hub: only the sessions made here that match one of these rules go to the hub (comma-separated cwd=/path, agent=claude-code|codex|pi|langgraph|openai-agents); the others stay on this machine")
	fs.StringVar(&a.keepLocal, "keep-local", "", "with -hub: the sessions made here that match one of these rules stay on this machine (same rules as -sync-only)")
	fs.Int64Var(&a.hubBandwidth, "hub-bandwidth", 0, "with -hub: bytes a second the link to the hub may carry, both ways together (0: no bound; not with tls:// hub URLs)")
	fs.StringVar(&a.hubCredentials, "hub-credentials", "", "file holding user:password of the tenant user the edge signs in to the hub as (mode 600)")
	fs.BoolVar(&a.search, "search", true, "keep a full-text index of messages (under the data dir's search/, in memory when encrypted) for the search operation")
	return a
}

// configure adds credentials and TLS to the node's config.
func (a *apiFlags) configure(cfg *cluster.Config, sc stream.Config) error {
	if a.repairStuck < 0 || a.repairDead < 0 {
		return usageError("-repair-stuck and -repair-dead must not be negative")
	}
	if a.diskWarn < 0 || a.diskWarn > 100 {
		return usageError("-disk-warn %v: a percentage, 0 to 100", a.diskWarn)
	}
	if err := a.configureEdge(cfg); err != nil {
		return err
	}
	if a.hub != "" {
		if err := a.recordRedaction(cfg.DataDir, sc.Redact); err != nil {
			return err
		}
	}
	if a.cacheBytes < 1<<20 || a.writeRate <= 0 || a.memoryLimit < 0 {
		return usageError("-session-cache must be at least 1 MiB, -tenant-write-rate positive, -memory-limit not negative")
	}
	if a.tenantConns < 0 || a.httpConns < 1 || a.httpReserved < 0 || a.httpReserved >= a.httpConns || a.httpPerAddr < 1 {
		return usageError("-tenant-max-conns must not be negative; -http-max-conns and -http-conns-per-addr must be positive, -http-reserved-conns less than -http-max-conns")
	}
	// The descriptors, shared so that no flood of one kind of connection
	// takes those of another (or the node's own files).
	httpConns, users := 0, 0
	if a.http != "" {
		httpConns, users = a.httpConns, gateway.DefaultConfig("", "").MaxUsers
	}
	a.files = budgetFiles(openFileLimit(), httpConns, users)
	a.files.report(a.log)
	cfg.MaxConnections = a.files.nats
	if a.retentionFile != "" {
		p, err := loadPolicy(a.retentionFile)
		if err != nil {
			return err
		}
		if a.retentionEvery <= 0 {
			return usageError("-retention-every must be positive")
		}
		a.retention = &p
	}
	if a.tenants != "" {
		f, err := tenants.Load(a.tenants)
		if err != nil {
			return err
		}
		a.tenantFile = f
		auth := f.Auth()
		service.Permit(auth, sc, cfg.Domain)
		auth.MaxConnectionsPerTenant = a.tenantConns
		cfg.Auth = auth
	}
	if a.tlsCert != "" || a.tlsKey != "" {
		cfg.TLS = &cluster.TLSConfig{CertFile: a.tlsCert, KeyFile: a.tlsKey, CAFile: a.tlsCA, VerifyClients: a.tlsVerify}
	} else if a.tlsVerify || a.tlsCA != "" {
		return usageError("-tls-ca and -tls-verify need -tls-cert and -tls-key")
	}
	return nil
}

// backendOptions are the serving node's: leaders kept spread, index
// records the writers left behind written, replicas repaired as the flags
// say.
func (a *apiFlags) backendOptions() []stream.Option {
	opts := []stream.Option{stream.WithLeaderBalancing(5 * time.Second), stream.WithIndexFollower()}
	if a.repairStuck > 0 || a.repairDead > 0 {
		rc := upkeep.DefaultRepairConfig()
		rc.StuckAfter, rc.DeadAfter = a.repairStuck, a.repairDead // 0: never, as the flags say
		for _, d := range []time.Duration{a.repairStuck, a.repairDead} {
			if d > 0 {
				rc.Every = min(rc.Every, d)
			}
		}
		if a.log != nil {
			w := a.log
			rc.Log = func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
		}
		opts = append(opts, stream.WithReplicaRepair(rc))
	}
	return opts
}

// api is what startAPI started; close stops it all.
type api struct {
	srv      *host.Services // the services, backends and indexes of every account
	services []*service.Service
	backends []*stream.Backend
	gw       *gateway.Gateway
	// policies are the backends' retention policies (nil: none).
	policies []*lifecycle.Policy
	// stops end the periodic jobs and wait for them.
	stops []func()
	// state is what OpNode tells of the node (serve_node.go).
	state *nodeState
}

// periodic runs fn every interval until the api closes (close waits for
// a run in progress): blob collection, retention.
func (a *api) periodic(every time.Duration, fn func(ctx context.Context)) {
	a.run(func(ctx context.Context) {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn(ctx)
		}
	})
}

// run runs job in a goroutine of the api's until its context ends, when
// the api closes (close waits for it).
func (a *api) run(job func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		job(ctx)
	}()
	a.stops = append(a.stops, func() { cancel(); <-done })
}

// collect collects every backend's unnamed blobs and snapshot objects
// (every node does: collections are safe to run at once, see blobs.Store
// and snapshots.Store.Collect).
func (a *api) collect(ctx context.Context) {
	for _, b := range a.backends {
		st, err := b.CollectBlobs(ctx)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "sessionlog: collecting blobs of %s: %v\n", b.Config().Stream, err)
		} else if st.Deleted > 0 {
			fmt.Fprintf(os.Stderr, "sessionlog: collected %d blob(s), %d bytes\n", st.Deleted, st.Freed)
		}
		sn, err := b.CollectSnapshots(ctx)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "sessionlog: collecting snapshots of %s: %v\n", b.Config().Stream, err)
		} else if sn.Deleted > 0 {
			fmt.Fprintf(os.Stderr, "sessionlog: collected %d snapshot object(s) no head named, %d bytes\n", sn.Deleted, sn.Freed)
		}
	}
}

// retentionLease is how long a retention run holds its lease without
// renewing it (it renews every few sessions).
const retentionLease = 10 * time.Minute

// retain runs each backend's retention policy, if this node takes the
// account's lease.
func (a *api) retain(ctx context.Context, holder string, tel *telemetry.T) {
	for i, b := range a.backends {
		pol := a.policies[i]
		if pol == nil || !pol.Active() {
			continue
		}
		out, err := a.retainOne(ctx, b, *pol, holder)
		for _, o := range out {
			outcome := "deleted"
			switch {
			case o.Skipped != "":
				outcome = "kept"
			case o.Archived:
				outcome = "archived"
			}
			tel.Retention.Add(ctx, 1, metric.WithAttributes(telemetry.OutcomeKey.String(outcome)))
		}
		switch {
		case errors.Is(err, lifecycle.ErrLeaseHeld):
		case err != nil && ctx.Err() == nil:
			fmt.Fprintf(os.Stderr, "sessionlog: retention of %s: %v\n", b.Config().Stream, err)
		case len(out) > 0:
			fmt.Fprintf(os.Stderr, "sessionlog: retention removed %d session(s) of %s\n", len(out), b.Config().Stream)
		}
	}
}

func (a *api) retainOne(ctx context.Context, b *stream.Backend, pol lifecycle.Policy, holder string) ([]lifecycle.Outcome, error) {
	leases, err := lifecycle.OpenLeases(ctx, b.JetStream(), retentionLease, b.Config().Replicas)
	if err != nil {
		return nil, err
	}
	var target lifecycle.Target
	if pol.Archive {
		if target, err = lifecycle.OpenStoreTarget(ctx, b.JetStream(), lifecycle.ArchiveBucket, b.Config().Replicas); err != nil {
			return nil, err
		}
	}
	return lifecycle.Scheduled(ctx, b, leases, holder, pol, target)
}

// startAPI runs a service per tenant (or one for the whole node) and the
// gateway.
func (a *apiFlags) start(ctx context.Context, node *cluster.Node, cfg cluster.Config, sc stream.Config) (*api, error) {
	out := &api{state: &nodeState{node: node, name: cfg.ServerName, dir: cfg.DataDir, warnBelow: a.diskWarn}}
	svcCfg := service.DefaultConfig(system.Config())
	svcCfg.Ready = node.Quorum
	svcCfg.Node = out.state.reply
	svcCfg.OutOfSpace = node.NoteOutOfSpace
	svcCfg.Limits.Rate, svcCfg.Limits.Burst = a.rate, max(1, int(2*a.rate))
	svcCfg.Limits.MaxRequestBytes = a.maxRequest
	svcCfg.Limits.MaxEntryBytes, svcCfg.Limits.MaxUploadBytes = a.maxUpload, a.maxUpload
	svcCfg.Limits.MaxStagedBytes = max(svcCfg.Limits.MaxStagedBytes, int64(a.maxUpload))
	svcCfg.MaxCachedBytes, svcCfg.Limits.TenantWriteBytes = a.cacheBytes, a.writeRate
	svcCfg.Limits.TenantWriteBurst = max(svcCfg.Limits.TenantWriteBurst, a.maxRequest)
	svcCfg.AcceptLinks = a.leafListen != ""
	svcCfg.Domain, sc.Origin = cfg.Domain, cfg.Domain
	// The node's rules (and each tenant's) are the deployment's: recorded
	// in its streams, every other writer follows them.
	sc.RecordRedaction = true
	if cfg.Hub != nil {
		sc.Edge, sc.Sync = true, a.syncRules()
		sc.DedupeWindow = max(sc.DedupeWindow, stream.EdgeDedupeWindow)
	}
	prices, err := pricesFor(cfg.DataDir, "")
	if err != nil {
		return nil, err
	}
	svcCfg.Prices = prices
	scfg := host.Config{Stream: sc, Service: svcCfg, BackendOptions: a.backendOptions()}
	if cfg.Auth != nil {
		for _, t := range cfg.Auth.Tenants {
			prices, err := pricesFor(cfg.DataDir, t.Name)
			if err != nil {
				return nil, err
			}
			own, _ := a.tenantFile.Of(t.Name)
			var edges []string
			for _, e := range t.Edges {
				edges = append(edges, e.Domain)
			}
			scfg.Tenants = append(scfg.Tenants, host.Tenant{Name: t.Name, Offload: own.Offload, Redact: own.Redact, Retention: own.Retention, Edges: edges, Prices: prices})
		}
	}
	if a.search {
		scfg.OpenSearch = func(ctx context.Context, tenant string, b *stream.Backend) (*search.Index, *search.Indexer, error) {
			return openSearch(ctx, cfg, tenant, b)
		}
	}
	srv, err := host.Start(ctx, node, scfg)
	if err != nil {
		return nil, err
	}
	out.srv, out.backends, out.services = srv, srv.Backends, srv.Services
	if cfg.Hub != nil {
		a.startLink(node, cfg, out)
	}
	a.reloadOnHangup(node, out)
	for _, t := range srv.Tenants {
		pol := a.retention
		if t.Retention != nil {
			pol = t.Retention
		}
		out.policies = append(out.policies, pol)
	}
	if a.blobGC > 0 {
		out.periodic(a.blobGC, out.collect)
	}
	for _, p := range out.policies {
		if p != nil && p.Active() {
			holder := fmt.Sprintf("%s/%d", cfg.ServerName, os.Getpid())
			tel := telemetry.Default() // what serve's telemetry.Setup installed
			out.periodic(a.retentionEvery, func(ctx context.Context) { out.retain(ctx, holder, tel) })
			break
		}
	}
	if a.http == "" {
		return out, nil
	}
	gcfg := gateway.DefaultConfig(a.http, node.ClientURL())
	// The layout as provisioned (its partition count resolved): the
	// gateway addresses each session's stream by it, in every account.
	gcfg.Auth, gcfg.Stream, gcfg.Subject = cfg.Auth != nil, out.backends[0].Config(), svcCfg.Subject
	gcfg.Ready = node.Current
	gcfg.Rate, gcfg.Burst, gcfg.MaxBodyBytes = a.rate, max(1, int(2*a.rate)), int64(a.maxRequest)
	gcfg.MaxUploadBytes = max(int64(a.maxUpload), gcfg.MaxBodyBytes)
	gcfg.MaxConns, gcfg.ReservedConns, gcfg.MaxConnsPerAddr = a.files.http, a.httpReserved, a.httpPerAddr
	if gcfg.TrustedProxies, err = parsePrefixes(a.httpProxies); err != nil {
		return nil, errors.Join(err, out.close(ctx))
	}
	if a.files.scaled {
		gcfg.MaxUsers = max(1, a.files.gatewayUsers)
		gcfg.MaxConns = max(2, gcfg.MaxConns)
		gcfg.ReservedConns = min(gcfg.ReservedConns, gcfg.MaxConns/8)
	}
	if cfg.TLS != nil {
		gcfg.CertFile, gcfg.KeyFile = cfg.TLS.CertFile, cfg.TLS.KeyFile
		roots, err := trustOwn(cfg.TLS.CertFile)
		if err != nil {
			return nil, errors.Join(err, out.close(ctx))
		}
		gcfg.NATSOptions = append(gcfg.NATSOptions, nats.Secure(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	}
	gw, err := gateway.Start(ctx, gcfg)
	if err != nil {
		return nil, errors.Join(err, out.close(ctx))
	}
	out.gw = gw
	return out, nil
}

// trustOwn is a pool with the system roots and the node's certificate.
func trustOwn(certFile string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(pem)
	return pool, nil
}

func (a *api) describe() string {
	s := fmt.Sprintf("service sessionlog.v1 (%d instance(s))", len(a.services))
	if a.gw != nil {
		s += ", HTTP " + a.gw.URL()
	}
	return s
}

func (a *api) close(ctx context.Context) error {
	for _, stop := range a.stops {
		stop()
	}
	var errs []error
	if a.gw != nil {
		errs = append(errs, a.gw.Close(ctx))
	}
	if a.srv != nil {
		errs = append(errs, a.srv.Close(ctx))
	}
	return errors.Join(errs...)
}

// parsePrefixes reads comma-separated addresses and CIDRs.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, usageError("-http-trusted-proxies: %q is neither an address nor a CIDR", f)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
