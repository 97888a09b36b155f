package cluster

import (
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// A stream leader cut off from its cluster keeps taking writes it cannot
// commit until its raft notices the lost quorum, about ten seconds later.
// Those writes are discarded when it rejoins, and nats-server (2.15)
// sometimes fails to bring such a diverged replica back: it retries its
// catch-up for minutes ("Expected first catchup entry to be a snapshot
// and peerstate"). fence steps the node down from every stream it leads
// as soon as it has routes to less than a quorum, so that its clients are
// told "no responders" (and go elsewhere) instead of adding to a log that
// will be thrown away.

// fenceEvery is how often a clustered node checks its routes.
const fenceEvery = 100 * time.Millisecond

// fence runs until stop is closed; done is closed when it returns.
func (n *Node) fence(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(fenceEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if n.Quorum() == nil {
			continue
		}
		n.stepDownStreams()
	}
}

// stepDownStreams steps down from the leadership of every stream this
// server leads.
func (n *Node) stepDownStreams() {
	jsz, err := n.srv.Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		return
	}
	name := n.srv.Name()
	for _, acc := range jsz.AccountDetails {
		for _, st := range acc.Streams {
			if st.Cluster != nil && st.Cluster.Leader == name {
				_ = n.srv.JetStreamStepdownStream(acc.Name, st.Name)
			}
		}
	}
}
