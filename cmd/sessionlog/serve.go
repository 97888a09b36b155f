package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/stream"
)

// runServe runs the embedded node with a client listener until
// interrupted, so that other processes (and other sessionlog invocations
// on the same data dir) share it.
func runServe(ctx context.Context, e env) error {
	fs := newFlags("serve", e)
	rf := addRepoFlags(fs)
	listen := fs.String("listen", "127.0.0.1:4222", "client address (port 0: any free port)")
	logs := fs.Bool("logs", false, "print the NATS server's log")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	cfg := cluster.DefaultConfig(rf.data)
	cfg.Listen, cfg.Logs = *listen, *logs
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer node.Close(context.WithoutCancel(ctx))
	nc, err := node.Connect()
	if err != nil {
		return err
	}
	if _, err := stream.New(ctx, nc, rf.streamConfig()); err != nil {
		return err
	}
	urlFile := serveURLFile(rf.data)
	if err := os.WriteFile(urlFile, []byte(node.ClientURL()+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(urlFile)
	fmt.Fprintf(e.stdout, "sessionlog serving %s (data %s); interrupt to stop\n", node.ClientURL(), rf.data)
	<-ctx.Done()
	return nil
}
