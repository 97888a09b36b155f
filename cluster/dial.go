package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// ClientOptions are the connection settings of every sessionlog client
// of a NATS deployment (the CLI, the gateway, the service against -url,
// the fault tests' writers): reconnect forever, to any server of the URL
// list and of the cluster it gossips, soon after losing one (100 ms, with
// jitter, so that a node's clients do not all come back at once); and
// notice a server that stopped answering within 0.5 to 0.75 s (a ping
// every 250 ms, two unanswered), where a TCP connection to a paused or
// cut-off server would stay up for minutes: a session's writers on a
// paused node resume elsewhere within the second a follower's fault may
// cost. A live server answers a ping from its read loop
// at once, however busy its disk. Requests that were in flight are
// resent by the stream package once the connection has moved.
func ClientOptions(name string) []nats.Option {
	return []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.PingInterval(250 * time.Millisecond),
		nats.MaxPingsOutstanding(2),
		nats.Timeout(2 * time.Second),
		nats.ReconnectBufSize(8 << 20),
	}
}

// Dial connects to an existing NATS deployment with ClientOptions, then
// opts. url may list several servers, comma-separated: give every node's.
func Dial(ctx context.Context, url string, opts ...nats.Option) (*nats.Conn, error) {
	if url == "" {
		return nil, fmt.Errorf("%w: empty NATS URL", ErrInvalidConfig)
	}
	opts = append(ClientOptions("sessionlog"), opts...)
	if d, ok := ctx.Deadline(); ok {
		opts = append(opts, nats.Timeout(time.Until(d)))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to %s: %w", url, err)
	}
	return nc, nil
}
