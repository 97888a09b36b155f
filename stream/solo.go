package stream

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream on a server that has no cluster has one copy, on that server,
// and nobody else can lead it: every write it acknowledged is in the
// state its direct gets read. A fresh read of it needs no barrier (a
// write, fsynced when the stream syncs always), and the embedded default
// runs exactly so. It takes the fast way only while that is known:
//
//   - the stream's info has no Raft group (a clustered server gives every
//     stream one, R1 included: those can move, and a moved stream has two
//     leaders for a moment — the barrier's reason);
//   - its server is the one the connection is attached to (its leader's
//     name is the connected server's), and that server has no routes (no
//     cluster name): a stream reached through a leafnode lives on another
//     server, which the connection cannot watch, and servers routed
//     together without a JetStream cluster could each hold a stream of
//     the name;
//   - that server has not restarted since: a server becomes clustered only
//     by a restart, and a restarted server has a new id, so the check is
//     tied to the connected server's id and made again when it changes;
//   - the answer came from the stream itself: a mirror of it that serves
//     direct gets (an operator's) answers from its own copy, so each
//     answer's Nats-Stream is checked (lastRead.fromStream) and one from
//     elsewhere falls back to the barrier. The barrier subject is asked
//     for beside the session's: the stream almost always has a barrier,
//     and an answer needs a message to name the stream it came from.

// soloCheck remembers, per connected server, whether the partition's
// stream is on it alone. A check that failed (the stream's info not
// answered, an election under way) says no, for soloRetry: the barrier is
// always right, and reads do not each wait on the stream's info meanwhile.
type soloCheck struct {
	mu       sync.Mutex
	serverID string    // the connected server's id when checked
	solo     bool      // the answer for that server
	until    time.Time // a failed check's no holds until then; zero: the answer holds for the server
}

// soloRetry is how long a failed check's no holds; soloInfoWait bounds the
// check, out of the read's own time.
const (
	soloRetry    = 10 * time.Second
	soloInfoWait = time.Second
)

// cached is the answer for server id at now, if there is one.
func (s *soloCheck) cached(id string, now time.Time) (solo, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serverID != id || (!s.until.IsZero() && !now.Before(s.until)) {
		return false, false
	}
	return s.solo, true
}

// remember keeps the answer for server id: solo, or no until now +
// soloRetry when the check failed.
func (s *soloCheck) remember(id string, solo, failed bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverID, s.solo, s.until = id, solo && !failed, time.Time{}
	if failed {
		s.until = now.Add(soloRetry)
	}
}

// soloInfo is what decides: the stream's cluster info, and the name and
// cluster of the server the connection is attached to.
func soloInfo(c *jetstream.ClusterInfo, connected, connectedCluster string) bool {
	return c != nil && c.RaftGroup == "" && c.Leader != "" && c.Leader == connected && connectedCluster == ""
}

// solo reports whether the stream is on the connected server alone (see
// above).
func (b *Backend) solo(ctx context.Context) bool {
	if b.noSolo {
		return false
	}
	id := b.nc.ConnectedServerId()
	if id == "" {
		return false
	}
	if solo, ok := b.soloCheck.cached(id, time.Now()); ok {
		return solo
	}
	ictx, cancel := context.WithTimeout(ctx, soloInfoWait)
	info, err := b.stream.Info(ictx)
	cancel()
	if err != nil {
		b.soloCheck.remember(id, false, true, time.Now())
		return false
	}
	solo := soloInfo(info.Cluster, b.nc.ConnectedServerName(), b.nc.ConnectedClusterName())
	if b.nc.ConnectedServerId() != id {
		return false // moved while asking: the answer may be another's
	}
	b.soloCheck.remember(id, solo, false, time.Now())
	return solo
}
