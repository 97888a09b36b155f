package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// A stream leader left without a quorum of routes steps down at once
// (nats-server's raft would keep leading for about ten seconds, taking
// writes it cannot commit): clients are told there is nobody to write to.
func TestLeaderWithoutQuorumStepsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, nodes := startLocal(t, ctx, 3)
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// A cluster just formed may not have placed its peers yet: retried
	// as provisioning retries it.
	err = stream.Provisioning(ctx, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FENCE", Subjects: []string{"fence.>"}, Replicas: 3})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Take the others away from the leader.
	leader := -1
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		for i, n := range nodes {
			if n.Server().JetStreamIsStreamLeader("$G", "FENCE") {
				leader = i
				return nil
			}
		}
		return errors.New("no leader yet")
	})
	for i, n := range nodes {
		if i != leader {
			n.Close(ctx)
		}
	}
	start := time.Now()
	sessiontest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if nodes[leader].Server().JetStreamIsStreamLeader("$G", "FENCE") {
			return errors.New("still leading")
		}
		return nil
	})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stepped down after %v", took)
	}
}
