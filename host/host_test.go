package host_test

import (
	"context"
	"testing"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/host"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// On the default account (no tenants) Start serves one service, which
// answers; Close stops it all, twice as well as once.
func TestStartServesTheDefaultAccount(t *testing.T) {
	ctx := context.Background()
	n, err := cluster.Start(ctx, cluster.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	srv, err := host.Start(ctx, n, host.Config{Stream: stream.DefaultConfig(), Service: service.DefaultConfig(sessiontest.TestConfig())})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Services) != 1 || len(srv.Backends) != 1 || srv.Tenants[0].Name != "" {
		t.Fatalf("started %d services, %d backends, tenants %+v", len(srv.Services), len(srv.Backends), srv.Tenants)
	}
	nc, err := n.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := api.NewClient(nc, "sessionlog.v1")
	if err := c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "s1"}, nil); err != nil {
		t.Fatal(err)
	}
	var ls api.ListReply
	if err := c.Call(ctx, api.OpList, api.ListRequest{}, &ls); err != nil || len(ls.Sessions) != 1 {
		t.Fatalf("list: %v %+v", err, ls)
	}
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if err := c.Call(ctx, api.OpList, api.ListRequest{}, nil); err == nil {
		t.Fatal("a service still answers after Close")
	}
}
