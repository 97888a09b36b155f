package stream

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestSoloInfo(t *testing.T) {
	for _, c := range []struct {
		name      string
		info      *jetstream.ClusterInfo
		connected string
		cluster   string
		want      bool
	}{
		{"a server without a cluster, connected to it", &jetstream.ClusterInfo{Leader: "n1"}, "n1", "", true},
		{"no cluster info", nil, "n1", "", false},
		{"an R1 stream of a cluster: it can move", &jetstream.ClusterInfo{Name: "c", RaftGroup: "S-R1F-abc", Leader: "n1"}, "n1", "c", false},
		{"a stream of another server (through a leafnode)", &jetstream.ClusterInfo{Leader: "hub"}, "edge", "", false},
		{"no leader named", &jetstream.ClusterInfo{}, "", "", false},
		{"a routed server whose JetStream is not clustered", &jetstream.ClusterInfo{Leader: "n1"}, "n1", "routed", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := soloInfo(c.info, c.connected, c.cluster); got != c.want {
				t.Fatalf("soloInfo = %v, want %v", got, c.want)
			}
		})
	}
}
