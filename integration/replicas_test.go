package integration

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

// startReplicas runs one all-sessions replica per node, each on a
// connection to that node only (reconnecting to it), as a reader process
// beside each node would.
func startReplicas(t *testing.T, ctx context.Context, c *procCluster) []*tracker.Tracker {
	t.Helper()
	var rs []*tracker.Tracker
	for i := range c.nodes {
		nc, err := nats.Connect(c.url(i), append(cluster.ClientOptions("replica"), nats.PingInterval(500*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cfg := stream.DefaultConfig()
		cfg.Replicas = 3
		b, err := stream.New(ctx, nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rc := tracker.DefaultConfig()
		rc.WriteSnapshots = false
		r, err := tracker.Start(ctx, b, rc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r.Close(cctx)
		})
		rs = append(rs, r)
	}
	return rs
}

// replicasAgree waits until every replica has applied the stream's last
// sequence and compares their trees.
func replicasAgree(t *testing.T, ctx context.Context, c *procCluster, rs []*tracker.Tracker, sessions []string) error {
	nc, err := nats.Connect(c.urls())
	if err != nil {
		return err
	}
	defer nc.Close()
	b, err := stream.New(ctx, nc, stream.DefaultConfig())
	if err != nil {
		return err
	}
	// Sequences are per partition: each session's stream's last.
	last := map[string]uint64{}
	for _, sid := range sessions {
		info, err := b.StreamOf(sid).Info(ctx)
		if err != nil {
			return err
		}
		last[sid] = info.State.LastSeq
	}
	var want map[string][32]byte
	for i, r := range rs {
		for _, sid := range sessions {
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			err := r.WaitFor(wctx, sid, last[sid])
			cancel()
			if err != nil {
				return fmt.Errorf("replica on node %d: %w (status %+v)", i, err, r.Status())
			}
		}
		got := map[string][32]byte{}
		for _, sid := range sessions {
			err := r.Read(ctx, sid, func(tr *session.Tree) error {
				h := sha256.New()
				es, err := tr.Entries()
				if err != nil {
					return err
				}
				for _, e := range es {
					fmt.Fprintf(h, "%s<%s;", e.ID, e.ParentID)
				}
				fmt.Fprintf(h, "leaf=%s", tr.Leaf())
				var d [32]byte
				copy(d[:], h.Sum(nil))
				got[sid] = d
				return nil
			})
			if err != nil {
				return fmt.Errorf("replica on node %d, %s: %w", i, sid, err)
			}
		}
		if st := r.Status(); st.Resets != 0 {
			t.Logf("replica on node %d rebuilt %d trees on the way (status %+v)", i, st.Resets, st)
		}
		if want == nil {
			want = got
			continue
		}
		for sid := range want {
			if want[sid] != got[sid] {
				return fmt.Errorf("replica on node %d disagrees on %s", i, sid)
			}
		}
	}
	return nil
}
