package stream

import (
	"testing"
	"time"

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

// A check's answer holds for its server; a failed check's no holds for
// soloRetry, then the stream is asked again; another server is asked anew.
func TestSoloCheckRemembers(t *testing.T) {
	var s soloCheck
	t0 := time.Unix(1_000_000, 0)
	if _, ok := s.cached("a", t0); ok {
		t.Fatal("an answer before any check")
	}
	s.remember("a", true, false, t0)
	if solo, ok := s.cached("a", t0.Add(time.Hour)); !ok || !solo {
		t.Fatalf("a check's yes an hour on: %v, %v", solo, ok)
	}
	if _, ok := s.cached("b", t0); ok {
		t.Fatal("server b answered by a's check")
	}
	s.remember("b", true, true, t0) // failed: no, whatever solo says
	if solo, ok := s.cached("b", t0.Add(soloRetry-time.Millisecond)); !ok || solo {
		t.Fatalf("a failed check within soloRetry: %v, %v; want a held no", solo, ok)
	}
	if _, ok := s.cached("b", t0.Add(soloRetry)); ok {
		t.Fatal("a failed check's no held past soloRetry")
	}
	s.remember("b", false, false, t0)
	if solo, ok := s.cached("b", t0.Add(time.Hour)); !ok || solo {
		t.Fatalf("a check's no an hour on: %v, %v", solo, ok)
	}
}
