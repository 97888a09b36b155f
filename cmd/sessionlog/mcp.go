package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/mcpserver"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// runMCP serves sessions over the Model Context Protocol on stdin and
// stdout, for an agent host to start as a tool server. It reaches the
// service of the deployment (-url, or the serve running on the data dir);
// on the embedded node alone it runs a service of its own, with the data
// dir's search index.
func runMCP(ctx context.Context, e env) error {
	fs := newFlags("mcp", e)
	rf := addRepoFlags(fs)
	rf.create = true // a host starts it before anything is stored
	allow := fs.Bool("allow-writes", false, "also offer append_message and label_entry (conditional on the sequence, like every write)")
	subject := fs.String("subject", slapi.DefaultSubject, "the service's subject prefix")
	tokens := fs.Int("max-tokens", mcpserver.DefaultConfig().MaxTokens, "the most get_context returns, whatever a call asks for")
	if _, err := parseArgs(fs, e.args, 0, "no arguments"); err != nil {
		return err
	}
	cfg := mcpserver.DefaultConfig()
	cfg.AllowWrites, cfg.MaxTokens, cfg.Subscriptions = *allow, *tokens, true
	cfg.DefaultTokens = min(cfg.DefaultTokens, cfg.MaxTokens)
	cfg.Version = service.DefaultConfig(system.Config()).Version
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	repo, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer repo.close(context.WithoutCancel(ctx))
	if repo.nc == nil {
		return usageError("mcp serves JetStream sessions (the embedded node or -url), not -files")
	}
	svc := slapi.NewClient(repo.nc, *subject)
	if !answers(ctx, svc) {
		if !repo.embedded {
			return fmt.Errorf("no sessionlog service answers on %s at this deployment: run `sessionlog serve` there", *subject)
		}
		stop, err := serveHere(ctx, rf, repo, *subject)
		if err != nil {
			return err
		}
		defer stop()
	}
	srv, err := mcpserver.New(cfg, svc)
	if err != nil {
		return err
	}
	defer srv.Close()
	// A malformed line is answered with a JSON-RPC error and the lines
	// after it served (mcpserver.StdioTransport).
	err = srv.Run(ctx, &mcpserver.StdioTransport{In: e.stdin, Out: e.stdout})
	if ctx.Err() != nil {
		return nil // stopped
	}
	return err
}

// answers reports whether a service answers on the client's subject.
func answers(ctx context.Context, svc *slapi.Client) bool {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := svc.Call(cctx, slapi.OpList, slapi.ListRequest{Limit: 1}, &slapi.ListReply{})
	var se *slapi.Error
	return !errors.As(err, &se) || se.Code != slapi.CodeUnavailable
}

// serveHere runs the service on this process's own node, with the data
// dir's search index, until stop.
func serveHere(ctx context.Context, rf *repoFlags, repo *openedRepo, subject string) (stop func(), err error) {
	b, ok := repo.Repo.(*stream.Backend)
	if !ok {
		return nil, errors.New("mcp: the embedded node's sessions are not a stream")
	}
	x, ix, err := openSearch(ctx, repo.node, "", b)
	if err != nil {
		return nil, err
	}
	// A host searches at once: the index first takes in what is stored.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = ix.CaughtUp(cctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(rf.warn, "sessionlog mcp: the search index is still catching up (%v): searches may miss the newest messages for a while\n", err)
	}
	scfg := service.DefaultConfig(system.Config())
	scfg.Subject, scfg.Search = subject, x
	svc, err := service.Start(ctx, repo.nc, b, scfg)
	if err != nil {
		ix.Close(context.WithoutCancel(ctx))
		x.Close()
		return nil, err
	}
	return func() {
		svc.Close(context.WithoutCancel(ctx))
		ix.Close(context.WithoutCancel(ctx))
		x.Close()
	}, nil
}
