package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// A hub of three nodes takes in an edge's offline writes; one hub node is
// killed (-9) mid-sync and started again while the edge goes on writing:
// the edge's link moves to another node, and the hub ends with every
// entry once, in the edge's order.
func TestEdgeSyncsThroughAHubNodeKilled(t *testing.T) {
	hub, leaves, edgeData, creds := startTenantHub(t)
	var urls []string
	for _, l := range leaves {
		urls = append(urls, "nats-leaf://"+l)
	}
	// Offline first: the edge writes before it can reach any hub node.
	blocked := make([]*clustertest.Proxy, 3)
	for i, l := range leaves {
		p, err := clustertest.NewProxy(l)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		p.SetCut(true)
		blocked[i] = p
		urls[i] = "nats-leaf://" + p.Addr()
	}
	edge := startServe(t, edgeData, "-domain", "laptop", "-hub", strings.Join(urls, ","), "-hub-credentials", creds, "-partitions", fmt.Sprint(partitions))
	ec := client(t, edge.URL, "")
	ctx := context.Background()
	var sessions []string
	text := strings.Repeat("h", 8<<10)
	want := map[string][]string{}
	write := func(n int) {
		for i := range n {
			id := sessions[i%len(sessions)]
			want[id] = append(want[id], appendMessages(t, ec, id, text, 1)...)
		}
	}
	for s := range 4 {
		id := fmt.Sprintf("hub-kill-%d", s)
		if err := ec.Call(ctx, api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, id)
	}
	write(400)
	for _, p := range blocked {
		p.SetCut(false)
	}
	// Mid-sync: the node the edge is most likely linked to goes, hard.
	waitLinked(t, edge)
	hub.kill(0)
	write(100)
	hub.restart(0)
	hub.waitReady(0)
	write(40)
	// Each session's entries, in the edge's order, once each.
	hc := client(t, "nats://"+hub.nodes[1].client, "alice")
	for _, id := range sessions {
		hubHolds(t, hc, want[id], id)
	}
}

// startTenantHub starts a hub of three nodes (domain hub) with tenant
// acme (user alice) and its edge laptop, and gives the hub nodes' leafnode
// addresses, and a data dir for the edge holding its credentials.
func startTenantHub(t *testing.T) (hub *procCluster, leaves []string, edgeData, creds string) {
	t.Helper()
	tenants := filepath.Join(t.TempDir(), "tenants.json")
	os.WriteFile(tenants, []byte(`{"tenants":[{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],
  "edges":[{"domain":"laptop","user":"laptop","password":"laptop-pw"}]}]}`), 0o600)
	leaves = make([]string, 3)
	for i := range leaves {
		leaves[i] = fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	}
	hub = startClusterWith(t, bin, 3, func(i int) []string {
		return []string{"-domain", "hub", "-leaf-listen", leaves[i], "-tenants", tenants}
	})
	edgeData = t.TempDir()
	creds = filepath.Join(edgeData, "hub.creds")
	os.WriteFile(creds, []byte("laptop:laptop-pw\n"), 0o600)
	return hub, leaves, edgeData, creds
}

// waitLinked waits until an edge says the hub took its sessions in.
func waitLinked(t *testing.T, edge *serveProc) {
	t.Helper()
	sessiontest.CheckFor(t, 60*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(edge.Log.String(), "linked to the hub") {
			return fmt.Errorf("the edge has not linked")
		}
		return nil
	})
}
