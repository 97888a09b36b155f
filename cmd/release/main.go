// Command release makes a release of sessionlog (see package release):
//
//	go run ./cmd/release -version v0.5.0     # from a clean checkout of the tag
//	go run ./cmd/release -snapshot -out /tmp/dist
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/agentcore/sessionlog/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := release.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
