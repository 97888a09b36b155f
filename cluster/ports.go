package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrPortInUse is returned by Start when an address the node would listen
// on is taken.
var ErrPortInUse = errors.New("cluster: port in use")

// portsFree checks that the client and route addresses can be listened
// on (port 0 always can).
func portsFree(cfg Config) error {
	addrs := []struct{ what, addr string }{{"client", cfg.Listen}}
	if cfg.Cluster != nil {
		addrs = append(addrs, struct{ what, addr string }{"route", cfg.Cluster.Listen})
	}
	for _, a := range addrs {
		_, port, err := splitHostPort(a.addr)
		if a.addr == "" || err != nil || port == 0 {
			continue
		}
		l, err := net.Listen("tcp", a.addr)
		if err != nil {
			return fmt.Errorf("%w: cannot listen for %ss on %s (another process holds it? choose another port): %v", ErrPortInUse, a.what, a.addr, err)
		}
		l.Close()
	}
	return nil
}

// waitReady waits until srv accepts connections, until deadline or until
// ctx ends (an interrupt stops a start at once).
func waitReady(ctx context.Context, srv *server.Server, deadline time.Time) error {
	for {
		step := min(100*time.Millisecond, time.Until(deadline))
		if step <= 0 {
			return ErrNotReady
		}
		if srv.ReadyForConnections(step) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
