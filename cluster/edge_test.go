package cluster_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// An edge node takes writes with its hub down; once the hub is up its
// link comes, bound to the tenant whose user it signed in as, and a
// stream of the hub's tenant sources what the edge wrote across the
// domains — what was written offline included, each message once.
func TestEdgeNodeWritesOfflineAndIsSourcedByItsHub(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The hub's address is chosen first, so that the edge can be told it
	// before the hub runs.
	hubCfg := cluster.DefaultConfig(t.TempDir())
	hubCfg.Domain, hubCfg.LeafListen = "hub", "127.0.0.1:"+freePort(t)
	hubCfg.Auth = &cluster.AuthConfig{ClientPermissions: cluster.Permissions{Publish: []string{">"}, Subscribe: []string{">"}},
		Tenants: []cluster.Tenant{
			{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}}},
			{Name: "globex", Users: []cluster.User{{Name: "bob", Password: "bob-pw"}}},
		}}
	edgeCfg := cluster.DefaultConfig(t.TempDir())
	edgeCfg.Domain = "laptop"
	edgeCfg.Hub = &cluster.HubConfig{URLs: []string{"nats-leaf://alice:alice-pw@" + hubCfg.LeafListen}, ReconnectEvery: 100 * time.Millisecond}
	edge, err := cluster.Start(ctx, edgeCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer edge.Close(context.Background())
	enc, err := edge.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	ejs, _ := jetstream.New(enc)
	if _, err := ejs.CreateStream(ctx, jetstream.StreamConfig{Name: "LOCAL", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := ejs.Publish(ctx, "s.offline", []byte{byte(i)}); err != nil {
			t.Fatalf("an offline write: %v", err)
		}
	}
	if edge.Linked() || edge.LinkID() != 0 {
		t.Fatal("linked with no hub running")
	}

	hub, err := cluster.Start(ctx, hubCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close(context.Background())
	if hub.LeafURL() != "nats-leaf://"+hubCfg.LeafListen {
		t.Fatalf("LeafURL %q", hub.LeafURL())
	}
	sessiontest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if !edge.Linked() || edge.LinkID() == 0 {
			return errNotYet
		}
		return nil
	})
	hnc, err := hub.ConnectTenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	defer hnc.Close()
	hjs, _ := jetstream.New(hnc)
	if _, err := hjs.CreateStream(ctx, jetstream.StreamConfig{Name: "FROM_LAPTOP", Sources: []*jetstream.StreamSource{{
		Name: "LOCAL", External: &jetstream.ExternalStream{APIPrefix: "$JS.laptop.API"}}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := ejs.Publish(ctx, "s.online", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := hjs.Stream(ctx, "FROM_LAPTOP")
	sessiontest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		info, err := s.Info(ctx)
		if err != nil || info.State.Msgs != 100 {
			return errNotYet
		}
		return nil
	})
	// globex sees nothing of it: the link is acme's.
	gnc, err := hub.ConnectTenant("globex")
	if err != nil {
		t.Fatal(err)
	}
	defer gnc.Close()
	gjs, _ := jetstream.New(gnc)
	if _, err := gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "STEAL", Sources: []*jetstream.StreamSource{{
		Name: "LOCAL", External: &jetstream.ExternalStream{APIPrefix: "$JS.laptop.API"}}}}); err == nil {
		st, _ := gjs.Stream(ctx, "STEAL")
		time.Sleep(time.Second) // nothing to wait for: it must stay empty
		if info, _ := st.Info(ctx); info != nil && info.State.Msgs != 0 {
			t.Fatalf("another tenant sourced %d messages of the edge", info.State.Msgs)
		}
	}
}

var errNotYet = errors.New("not yet")

// freePort is a port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
