package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
)

// LocalClusterConfigs returns the configs of an n-node cluster on loopback
// ports that were free when asked, one data dir per node under dir: for
// tests and for trying a cluster on one machine.
func LocalClusterConfigs(dir string, n int) ([]Config, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: cluster of %d nodes", ErrInvalidConfig, n)
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	cfgs := make([]Config, n)
	for i := range n {
		c := DefaultConfig(filepath.Join(dir, fmt.Sprintf("n%d", i+1)))
		c.ServerName = fmt.Sprintf("n%d", i+1)
		c.Listen = fmt.Sprintf("127.0.0.1:%d", ports[2*i])
		cl := &ClusterConfig{Name: "sessionlog", Listen: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]), Size: n}
		for j := range n {
			if j != i {
				cl.Routes = append(cl.Routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[2*j+1]))
			}
		}
		c.Cluster = cl
		cfgs[i] = c
	}
	return cfgs, nil
}

// StartAll starts nodes together (each waits for the others to form the
// cluster). On error, the ones started are closed.
func StartAll(ctx context.Context, cfgs []Config) ([]*Node, error) {
	nodes := make([]*Node, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = Start(ctx, c)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, n := range nodes {
			if n != nil {
				n.Close(ctx)
			}
		}
		return nil, err
	}
	return nodes, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: reserve a port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
