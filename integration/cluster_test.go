package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// node is one `sessionlog serve` process.
type node struct {
	name   string
	data   string
	client string // 127.0.0.1:port
	bin    string // the binary it runs, when not the cluster's (an upgrade)
	args   []string
	cmd    *exec.Cmd
	log    *clustertest.SyncBuffer
}

// procCluster is a cluster of `sessionlog serve` processes whose routes go
// through proxies, one per direction of every pair of nodes.
// The suite runs on a partitioned deployment: faults hit the leader of
// targetPartition, whose stream holds some of the workload's sessions
// (itest-3, itest-7), a linearizability client's (itest-lin-1) and the
// minority writer's; the other partitions carry the rest meanwhile.
const (
	partitions      = 4
	targetPartition = 0
)

// layout is the deployment's stream layout, as every node provisions it.
func layout() stream.Config {
	cfg := stream.DefaultConfig()
	cfg.Partitions = partitions
	return cfg
}

// targetStream is the stream whose leader the faults hit.
func targetStream() string { return layout().Streams()[targetPartition] }

type procCluster struct {
	t       *testing.T
	bin     string
	nodes   []*node
	proxies map[[2]int]*clustertest.Proxy
}

func startCluster(t *testing.T, bin string, n int) *procCluster {
	t.Helper()
	return startClusterWith(t, bin, n, nil)
}

// startClusterWith is startCluster with more serve flags for node i
// (extra may be nil).
func startClusterWith(t *testing.T, bin string, n int, extra func(i int) []string) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: bin, proxies: map[[2]int]*clustertest.Proxy{}}
	routePorts := make([]int, n)
	for i := range n {
		routePorts[i] = clustertest.FreePort(t)
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			p, err := clustertest.NewProxy(fmt.Sprintf("127.0.0.1:%d", routePorts[j]))
			if err != nil {
				t.Fatal(err)
			}
			c.proxies[[2]int{i, j}] = p
		}
	}
	dir := t.TempDir()
	for i := range n {
		nd := &node{name: fmt.Sprintf("n%d", i+1), data: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			client: fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))}
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, "nats-route://"+c.proxies[[2]int{i, j}].Addr())
			}
		}
		// Advertising an address nobody listens on keeps the nodes from
		// learning each other's real route ports and going around the
		// proxies.
		nd.args = []string{"serve", "-data", nd.data, "-name", nd.name, "-listen", nd.client,
			"-cluster", "itest", "-cluster-listen", fmt.Sprintf("127.0.0.1:%d", routePorts[i]),
			"-cluster-advertise", "127.0.0.1:1", "-cluster-size", fmt.Sprint(n),
			"-routes", strings.Join(routes, ","), "-replicas", "3", "-partitions", fmt.Sprint(partitions), "-http", "", "-logs",
			// A replica that stops catching up is repaired within the
			// round's wait for convergence; a node is never gone long
			// enough here to be replaced.
			"-repair-stuck", "15s"}
		if extra != nil {
			nd.args = append(nd.args, extra(i)...)
		}
		c.nodes = append(c.nodes, nd)
	}
	for i := range c.nodes {
		c.spawn(i)
	}
	for i := range c.nodes {
		c.waitReady(i)
	}
	t.Cleanup(c.close)
	return c
}

func (c *procCluster) spawn(i int) {
	nd := c.nodes[i]
	os.Remove(filepath.Join(nd.data, "serve.url"))
	if nd.log == nil {
		nd.log = &clustertest.SyncBuffer{}
	}
	fmt.Fprintf(nd.log, "--- %s started at %s\n", nd.name, time.Now().Format("15:04:05.000"))
	bin := c.bin
	if nd.bin != "" {
		bin = nd.bin
	}
	nd.cmd = exec.Command(bin, nd.args...)
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
}

// waitReady waits for the node's serve.url: written once the node has
// routes to the others, a current meta group and the stream provisioned.
func (c *procCluster) waitReady(i int) {
	nd := c.nodes[i]
	// Starting includes provisioning the streams, which waits out
	// elections (bounded at a minute by the node itself).
	sessiontest.CheckFor(c.t, 120*time.Second, 20*time.Millisecond, func() error {
		if nd.cmd.ProcessState != nil {
			return fmt.Errorf("%s exited: %s", nd.name, nd.log)
		}
		if _, err := os.Stat(filepath.Join(nd.data, "serve.url")); err != nil {
			return fmt.Errorf("%s not ready (%v); its output so far:\n%s\nthe others' last lines:\n%s", nd.name, err, nd.log, c.tails(i))
		}
		return nil
	})
}

// tails is the last lines of every node's output but node skip's: a node
// that cannot start often says why in another's.
func (c *procCluster) tails(skip int) string {
	var b strings.Builder
	for j, nd := range c.nodes {
		if j == skip || nd.log == nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(nd.log.String()), "\n")
		fmt.Fprintf(&b, "--- %s:\n%s\n", nd.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

func (c *procCluster) kill(i int) {
	nd := c.nodes[i]
	nd.cmd.Process.Signal(syscall.SIGKILL)
	nd.cmd.Wait()
}

// terminate stops node i as an operator would (SIGTERM) and waits for it.
func (c *procCluster) terminate(i int) {
	nd := c.nodes[i]
	nd.cmd.Process.Signal(syscall.SIGTERM)
	nd.cmd.Wait()
}

func (c *procCluster) restart(i int) {
	c.spawn(i)
	c.waitReady(i)
}

func (c *procCluster) pause(i int, paused bool) {
	sig := syscall.SIGCONT
	if paused {
		sig = syscall.SIGSTOP
	}
	c.nodes[i].cmd.Process.Signal(sig)
}

// cutOff drops (or restores) every route to and from node i.
func (c *procCluster) cutOff(i int, cut bool) {
	for k, p := range c.proxies {
		if k[0] == i || k[1] == i {
			p.SetCut(cut)
		}
	}
}

func (c *procCluster) url(i int) string { return "nats://" + c.nodes[i].client }

// urlsBut lists every node's URL but node's.
func (c *procCluster) urlsBut(node int) string {
	var us []string
	for i := range c.nodes {
		if i != node {
			us = append(us, c.url(i))
		}
	}
	return strings.Join(us, ",")
}

func (c *procCluster) urls() string {
	var us []string
	for i := range c.nodes {
		us = append(us, c.url(i))
	}
	return strings.Join(us, ",")
}

func (c *procCluster) close() {
	for i, nd := range c.nodes {
		if nd.cmd != nil && nd.cmd.ProcessState == nil {
			c.pause(i, false)
			c.kill(i)
		}
	}
	for _, p := range c.proxies {
		p.Close()
	}
}

// streamPeers returns the indexes of the node leading the target stream
// and of the nodes holding its other replicas.
func (c *procCluster) streamPeers(ctx context.Context) (leader int, followers []int, err error) {
	return c.streamPeersVia(ctx, c.urls())
}

// streamPeersVia is streamPeers asking through the servers of urls.
func (c *procCluster) streamPeersVia(ctx context.Context, urls string) (leader int, followers []int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := nats.Connect(urls, nats.Timeout(2*time.Second))
	if err != nil {
		return -1, nil, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, targetStream())
	if err != nil {
		return -1, nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return -1, nil, err
	}
	if info.Cluster == nil {
		return -1, nil, errors.New("stream is not clustered")
	}
	index := map[string]int{}
	for i, nd := range c.nodes {
		index[nd.name] = i
	}
	leader, ok := index[info.Cluster.Leader]
	if !ok {
		return -1, nil, fmt.Errorf("no leader (%q)", info.Cluster.Leader)
	}
	for _, r := range info.Cluster.Replicas {
		followers = append(followers, index[r.Name])
	}
	if len(followers) == 0 {
		return -1, nil, errors.New("no followers")
	}
	return leader, followers, nil
}

// converged reports whether every replica of every partition's stream is
// current.
func (c *procCluster) converged(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := nats.Connect(c.urls(), nats.Timeout(2*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, name := range layout().Streams() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return fmt.Errorf("%s: no stream leader", name)
		}
		if len(info.Cluster.Replicas) != min(3, len(c.nodes))-1 {
			return fmt.Errorf("%s: %d replicas besides the leader", name, len(info.Cluster.Replicas))
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline || r.Lag != 0 {
				return fmt.Errorf("%s: replica %s: current %v offline %v lag %d", name, r.Name, r.Current, r.Offline, r.Lag)
			}
		}
	}
	return nil
}
