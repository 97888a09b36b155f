package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster"
)

func TestEmbeddedNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n, err := cluster.Start(ctx, cluster.DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	if n.ClientURL() != "" {
		t.Errorf("default node listens on %s, want in-process only", n.ClientURL())
	}
	if _, err := cluster.Start(ctx, cluster.DefaultConfig(dir)); !errors.Is(err, cluster.ErrDataDirInUse) {
		t.Fatalf("second node on the same dir: %v", err)
	}
	nc, err := n.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "X", Subjects: []string{"x.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "x.a", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if !n.Server().JetStreamConfig().SyncAlways {
		t.Error("default node does not fsync every write")
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := n.Connect(); !errors.Is(err, cluster.ErrClosed) {
		t.Fatalf("connect after close: %v", err)
	}
	// A new node on the same dir finds the stream and its message.
	n2, err := cluster.Start(ctx, cluster.DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close(ctx)
	nc2, _ := n2.Connect()
	js2, _ := jetstream.New(nc2)
	s, err := js2.Stream(ctx, "X")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "x.a")
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if string(m.Data) != "kept" {
		t.Fatalf("after restart: %q", m.Data)
	}
}

func TestListenerAndDial(t *testing.T) {
	ctx := context.Background()
	cfg := cluster.DefaultConfig(t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := cluster.Dial(dctx, n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if _, err := cluster.Dial(dctx, ""); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("empty url: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*cluster.Config)
		wantErr bool
	}{
		{"default", func(*cluster.Config) {}, false},
		{"no dir", func(c *cluster.Config) { c.DataDir = "" }, true},
		{"no timeout", func(c *cluster.Config) { c.ReadyTimeout = 0 }, true},
		{"huge payload", func(c *cluster.Config) { c.MaxPayload = 1 << 30 }, true},
		{"negative store", func(c *cluster.Config) { c.MaxStore = -1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster.DefaultConfig("/tmp/x")
			tt.mutate(&c)
			err := c.Validate()
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, cluster.ErrInvalidConfig)) {
				t.Fatalf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
	bad := cluster.DefaultConfig(t.TempDir())
	bad.Listen = "nope"
	if _, err := cluster.Start(context.Background(), bad); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("bad listen address: %v", err)
	}
}
