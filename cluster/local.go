package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// LocalConfigs returns the configs of an n-node cluster on loopback
// ports that were free when asked, one data dir per node under dir: for
// tests and for trying a cluster on one machine.
func LocalConfigs(dir string, n int) ([]Config, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: cluster of %d nodes", ErrInvalidConfig, n)
	}
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	cfgs := make([]Config, n)
	for i := range n {
		c := DefaultConfig(filepath.Join(dir, fmt.Sprintf("n%d", i+1)))
		c.ServerName = fmt.Sprintf("n%d", i+1)
		c.Listen = fmt.Sprintf("127.0.0.1:%d", ports[2*i])
		cl := &Join{Name: "sessionlog", Listen: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]), Size: n}
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

// FreePorts returns n loopback TCP ports nobody listens on now, below
// the range the system takes the ports of outgoing connections from. A
// port the system hands out (":0") is in that range: while a node chosen
// to listen on it is down (a restart, a kill), another node's route
// connection can take it as its own end, and the node cannot listen on
// it again ("address already in use"). No port is handed out twice in
// one process.
func FreePorts(n int) ([]int, error) {
	given.Lock()
	defer given.Unlock()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := 10000, ephemeralStart()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10000 {
			return nil, fmt.Errorf("cluster: no free port in %d..%d", lo, hi)
		}
		port := lo + rand.IntN(hi-lo)
		if given.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // someone's
		}
		ls = append(ls, l)
		given.ports[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// ephemeralStart is where the system's ports for outgoing connections
// begin (Linux's ip_local_port_range; 32768 where it cannot be read).
func ephemeralStart() int {
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(data), &lo, &hi); err == nil && lo > 11000 {
			return lo
		}
	}
	return 32768
}
