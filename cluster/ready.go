package cluster

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
)

// Readiness: what /readyz, the service and a rolling restart ask of a
// node.

// Ready says whether the node can serve now: JetStream is up and, in a
// cluster, the node reaches a quorum of the configured size (itself and
// Size/2 others) and is current with a meta leader. With one of three
// nodes (two of five) down the rest serve, and the missing ones catch up
// when they return. The error names what is missing.
func (n *Node) Ready() error {
	srv, cfg := n.srv, n.cfg
	if !srv.JetStreamEnabled() {
		return errors.New("JetStream is not running")
	}
	if err := n.watch.check(notReadyAfter); err != nil {
		return err
	}
	if cfg.Cluster == nil {
		return nil
	}
	quorum := cfg.Cluster.Size/2 + 1
	routes, current := srv.NumRemotes(), srv.JetStreamIsCurrent()
	if routes+1 >= quorum && current {
		return nil
	}
	if routes+1 >= quorum {
		return fmt.Errorf("cluster %s: not current with a JetStream meta leader (meta peers known: %d)", cfg.Cluster.Name, len(srv.JetStreamClusterPeers()))
	}
	what := fmt.Sprintf("cluster %s: routes to %d other node(s), a quorum of %d nodes needs %d", cfg.Cluster.Name, routes, cfg.Cluster.Size, quorum-1)
	if !current {
		what += fmt.Sprintf("; not current with a JetStream meta leader (meta peers known: %d)", len(srv.JetStreamClusterPeers()))
	}
	return errors.New(what)
}

// Quorum reports whether the node has routes to a quorum of its cluster
// (always, outside one): what a node cut off from the others lacks. Unlike
// Ready it does not ask for a current meta leader, which a healthy node
// lacks for a moment during every meta election; the service refuses
// requests on this alone.
func (n *Node) Quorum() error {
	if n.cfg.Cluster == nil {
		return nil
	}
	quorum := n.cfg.Cluster.Size/2 + 1
	if routes := n.srv.NumRemotes(); routes+1 < quorum {
		return fmt.Errorf("cluster %s: routes to %d other node(s), a quorum of %d nodes needs %d", n.cfg.Cluster.Name, routes, n.cfg.Cluster.Size, quorum-1)
	}
	return nil
}

// Current is Ready and, besides, every stream and consumer this node
// holds a copy of is current with its leader: the node has caught up
// after a restart. It is what a rolling restart waits for before it stops
// the next node (a leadership handed to a node still catching up waits
// out an election instead) and what /readyz reports. Start waits only for
// Ready: catching up a large stream may take longer than any start-up
// timeout should.
func (n *Node) Current() error {
	if err := n.Ready(); err != nil {
		return err
	}
	if n.cfg.Cluster == nil {
		return nil
	}
	if h := n.srv.Healthz(&server.HealthzOptions{}); h.Status != "ok" {
		return fmt.Errorf("cluster %s: catching up: %s", n.cfg.Cluster.Name, h.Error)
	}
	return nil
}
