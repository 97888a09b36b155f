package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/telemetry"
)

// runServe runs the embedded node with a client listener until
// interrupted, so that other processes (and other sessionlog invocations
// on the same data dir) share it.
// stopGrace bounds how long serve waits for requests in flight when told
// to stop.
const stopGrace = 15 * time.Second

func runServe(ctx context.Context, e env) error {
	fs := newFlags("serve", e)
	rf := addRepoFlags(fs)
	rf.create = true
	listen := fs.String("listen", "127.0.0.1:4222", "client address (port 0: any free port)")
	logs := fs.Bool("logs", false, "print the NATS server's log")
	name := fs.String("name", "", "node name (required in a cluster; default sessionlog)")
	clusterName := fs.String("cluster", "", "join this JetStream cluster (with -cluster-listen, -routes, -cluster-size)")
	clusterListen := fs.String("cluster-listen", "0.0.0.0:6222", "route address of this node")
	routes := fs.String("routes", "", "comma-separated route URLs of the other nodes (nats-route://host:6222)")
	size := fs.Int("cluster-size", 3, "number of nodes in the cluster")
	advertise := fs.String("cluster-advertise", "", "route address the other nodes learn for this one (default: -cluster-listen)")
	maxStore := fs.Int64("max-store", 0, "JetStream file store limit in bytes (0: the server's default)")
	maxMemory := fs.Int64("max-memory", 0, "JetStream memory limit in bytes (0: the server's default)")
	af := addAPIFlags(fs)
	metricsAddr := fs.String("metrics", "", "serve a Prometheus scrape endpoint (/metrics) at this address; traces and metrics also go where the OTEL_* environment says")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.SetupConfig{ServiceName: "sessionlog", ServiceVersion: service.DefaultConfig(system.Config()).Version, PrometheusAddr: *metricsAddr})
	if err != nil {
		return err
	}
	defer tel.Close(context.WithoutCancel(ctx))
	cfg, err := rf.nodeConfig()
	if err != nil {
		return err
	}
	cfg.Listen, cfg.Logs, cfg.MaxStore, cfg.MaxMemory = *listen, *logs, *maxStore, *maxMemory
	if *name != "" {
		cfg.ServerName = *name
	}
	if *clusterName != "" {
		cfg.Cluster = &cluster.Join{Name: *clusterName, Listen: *clusterListen, Size: *size, Advertise: *advertise}
		for _, r := range strings.Split(*routes, ",") {
			if r = strings.TrimSpace(r); r != "" {
				cfg.Cluster.Routes = append(cfg.Cluster.Routes, r)
			}
		}
		if !flagSet(fs, "replicas") {
			rf.replicas = min(3, *size) // replicated by default when clustered
		}
	} else if !flagSet(fs, "replicas") {
		// One node: one replica. (An edge's server names a cluster of its
		// own for its leafnode link, which would read as a cluster.)
		rf.replicas = 1
	}
	af.log = e.stderr
	cfg.Say = func(msg string) { fmt.Fprintln(e.stderr, msg) }
	if err := af.configure(&cfg, rf.streamConfig()); err != nil {
		return err
	}
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer node.Close(context.WithoutCancel(ctx))
	// Provisioning can wait out a cluster's elections: say where we are.
	fmt.Fprintf(e.stderr, "sessionlog: node %s ready; provisioning streams and starting the service\n", node.ClientURL())
	a, err := af.start(ctx, node, cfg, rf.streamConfig())
	if err != nil {
		return err
	}
	setMemoryLimit(af.memoryLimit)
	defer memoryReleaser(ctx)()
	instruments := telemetry.Default() // on the providers Setup installed
	instruments.Zero(ctx)
	unregister, err := registerHealth(instruments, a.backends)
	if err != nil {
		return err
	}
	defer unregister()
	unregisterDisk, err := registerDisk(instruments, node)
	if err != nil {
		return err
	}
	defer unregisterDisk()
	defer func() {
		// Stopping is bounded whatever clients do: requests in flight get
		// stopGrace, then are cut off.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
		defer cancel()
		a.close(sctx)
	}()
	where := ""
	if cfg.Cluster != nil {
		where = fmt.Sprintf(", node %s of cluster %s, stream replicas %d", cfg.ServerName, cfg.Cluster.Name, rf.replicas)
	}
	if cfg.Auth != nil {
		where += fmt.Sprintf(", %d tenant(s)", len(cfg.Auth.Tenants))
	}
	fmt.Fprintf(e.stdout, "sessionlog serving %s (data %s%s); %s; %s; interrupt to stop\n", node.ClientURL(), rf.data, where, a.describe(), tel.Describe())
	// Last: once the file is there, everything above is ready and this
	// node has caught up with the others.
	if waitCurrent(ctx, node, e.stderr); ctx.Err() != nil {
		return nil // stopped while catching up
	}
	// Written whole, then renamed into place: a reader (the CLI, a test)
	// that sees the file sees the URL, never an empty file being written.
	if err := writeURLFile(rf.data, node.ClientURL()); err != nil {
		return err
	}
	defer os.Remove(serveURLFile(rf.data))
	select {
	case <-ctx.Done():
		return nil
	case <-node.Broken():
		// Crash-only: a node that cannot serve and will not recover by
		// itself exits, so that its supervisor starts it again.
		return fmt.Errorf("%w; exiting so that the node is started again", node.BrokenErr())
	}
}

// waitCurrent waits until the node has caught up with the cluster (see
// cluster.Node.Current), saying what it waits for now and then.
func waitCurrent(ctx context.Context, node *cluster.Node, stderr io.Writer) {
	said := time.Now()
	for {
		err := node.Current()
		if err == nil {
			return
		}
		if time.Since(said) > 5*time.Second {
			fmt.Fprintf(stderr, "sessionlog: serving, not yet current: %v\n", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
