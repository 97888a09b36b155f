// Package clustertest starts embedded nodes for other packages' tests.
package clustertest

import (
	"context"
	"fmt"
	"os"

	"github.com/agentcore/sessionlog/cluster"
)

// RunWithNode starts a node in a temporary data dir, listening on a random
// loopback port (tests connect several clients over TCP), and returns
// run's exit code; 1 when the node cannot start. tweak may adjust the
// config. Meant for TestMain: os.Exit(clustertest.RunWithNode(…)).
func RunWithNode(prefix string, tweak func(*cluster.Config), run func(n *cluster.Node) int) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	cfg := cluster.DefaultConfig(dir)
	cfg.Listen = "127.0.0.1:0"
	if tweak != nil {
		tweak(&cfg)
	}
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer node.Close(ctx)
	return run(node)
}
