package deploy

import (
	"bytes"
	"context"
	"fmt"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"gopkg.in/yaml.v3"

	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// The compose file's and the StatefulSet's node command lines, run as
// they are written — only the hosts (service names, pod names) and ports
// moved to loopback — form a cluster whose nodes all answer /readyz.
func TestDeploymentsStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three sessionlog processes per deployment")
	}
	bin := filepath.Join(t.TempDir(), "sessionlog")
	build := exec.Command("go", "build", "-o", bin, "../cmd/sessionlog")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("compose", func(t *testing.T) {
		var doc struct {
			Services map[string]struct {
				Command []string `yaml:"command"`
			} `yaml:"services"`
		}
		readYAML(t, "compose/compose.yaml", &doc)
		var nodes []deployedNode
		for _, name := range []string{"n1", "n2", "n3"} {
			nodes = append(nodes, deployedNode{host: name, args: doc.Services[name].Command})
		}
		startCluster(t, bin, nodes)
	})
	t.Run("kubernetes", func(t *testing.T) {
		data, err := os.ReadFile("k8s/sessionlog.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				Kind string `yaml:"kind"`
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Args []string `yaml:"args"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if dec.Decode(&doc) != nil {
				break
			}
			if doc.Kind == "StatefulSet" {
				args = doc.Spec.Template.Spec.Containers[0].Args
			}
		}
		var nodes []deployedNode
		for i := range 3 {
			pod := fmt.Sprintf("sessionlog-%d", i)
			a := make([]string, len(args))
			for j, s := range args {
				a[j] = strings.ReplaceAll(s, "$(POD_NAME)", pod) // what Kubernetes substitutes
			}
			nodes = append(nodes, deployedNode{host: pod + ".sessionlog", args: a})
		}
		startCluster(t, bin, nodes)
	})
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// deployedNode is one node's command line and the host name others use
// for it.
type deployedNode struct {
	host string
	args []string
	// on loopback
	client, route, http int
	data                string
}

// flagsOf reads "-f v" and "-f=v" alike, in order.
func flagsOf(args []string) (verb string, flags [][2]string) {
	verb = args[0]
	for i := 1; i < len(args); i++ {
		name, val, eq := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !eq && i+1 < len(args) {
			i++
			val = args[i]
		}
		flags = append(flags, [2]string{name, val})
	}
	return verb, flags
}

// startCluster runs the nodes' command lines with hosts and ports moved to
// loopback, waits for every /readyz, and checks the nodes are one
// cluster: a stream made through one is replicated on all three.
func startCluster(t *testing.T, bin string, nodes []deployedNode) {
	byHost := map[string]*deployedNode{}
	for i := range nodes {
		n := &nodes[i]
		n.client, n.route, n.http = clustertest.FreePort(t), clustertest.FreePort(t), clustertest.FreePort(t)
		byHost[n.host] = n
	}
	var procs []*exec.Cmd
	var logs []*clustertest.SyncBuffer
	var cmds [][]string
	for i := range nodes {
		n := &nodes[i]
		verb, flags := flagsOf(n.args)
		cmd := []string{verb}
		for _, f := range flags {
			name, val := f[0], f[1]
			switch name {
			case "data":
				val = t.TempDir()
				n.data = val
			case "encryption-key-file":
				val = testKey(t)
			case "listen":
				val = fmt.Sprintf("127.0.0.1:%d", n.client)
			case "cluster-listen":
				val = fmt.Sprintf("127.0.0.1:%d", n.route)
			case "http":
				val = fmt.Sprintf("127.0.0.1:%d", n.http)
			case "routes":
				var routes []string
				for _, r := range strings.Split(val, ",") {
					host := strings.TrimPrefix(r, "nats-route://")
					host, _, _ = strings.Cut(host, ":")
					other, ok := byHost[host]
					if !ok {
						t.Fatalf("%s routes to %q, which is no node", n.host, host)
					}
					if other == n {
						continue // a StatefulSet lists every pod, itself included
					}
					routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", other.route))
				}
				val = strings.Join(routes, ",")
			}
			cmd = append(cmd, "-"+name+"="+val)
		}
		cmds = append(cmds, cmd)
	}
	// Registered after the data dirs (t.TempDir above): cleanups run last
	// first, so the processes are stopped before their dirs are removed.
	t.Cleanup(func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	})
	for _, cmd := range cmds {
		p := exec.Command(bin, cmd...)
		log := &clustertest.SyncBuffer{}
		p.Stdout, p.Stderr = log, log
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		procs, logs = append(procs, p), append(logs, log)
	}
	for i, n := range nodes {
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", n.http)
		sessiontest.CheckFor(t, 90*time.Second, 100*time.Millisecond, func() error {
			res, err := http.Get(url)
			if err != nil {
				return fmt.Errorf("%s: %v\n%s", n.host, err, logs[i])
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				return fmt.Errorf("%s: /readyz %d\n%s", n.host, res.StatusCode, logs[i])
			}
			return nil
		})
		if res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.http)); err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: /healthz %v %v", n.host, res, err)
		}
	}
	for _, n := range nodes {
		if _, err := os.Stat(filepath.Join(n.data, "encryption.check")); err != nil {
			t.Errorf("%s: the data dir is not encrypted: %v", n.host, err)
		}
	}
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", nodes[0].client))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := stream.New(ctx, nc, stream.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.Partitions()[0].Stream().Info(ctx)
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the nodes are not one cluster: %+v %v", info, err)
	}
}

// testKey writes an encryption key file, mode 600, as an operator would.
func testKey(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sessionlog.key")
	if err := os.WriteFile(p, []byte("dGVzdCBrZXkgb2YgdGhlIGRlcGxveW1lbnQgdGVzdHM=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
