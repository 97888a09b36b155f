package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/stream"
)

// searchDir is where a node keeps the search index of one account's
// sessions ("" for the node's own, without tenants).
func searchDir(dataDir, tenant string) string {
	if tenant == "" {
		tenant = "_node"
	}
	return filepath.Join(dataDir, "search", tenant)
}

// openSearch opens (or makes) the index of b's sessions and follows the
// stream into it. A node that encrypts its data keeps the index in
// memory only, rebuilt from the stream at each start: on disk it would
// hold the text in the clear.
func openSearch(ctx context.Context, cfg cluster.Config, tenant string, b *stream.Backend) (*search.Index, *search.Indexer, error) {
	dir := searchDir(cfg.DataDir, tenant)
	if cfg.Encryption != nil {
		dir = ""
	}
	prices, err := pricesFor(cfg.DataDir, tenant)
	if err != nil {
		return nil, nil, err
	}
	scfg := search.DefaultConfig(dir)
	scfg.Prices = prices
	x, _, err := search.Open(scfg)
	if err != nil {
		return nil, nil, err
	}
	ix, err := search.Follow(ctx, x, b)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("search index of %s: %w", b.Config().Stream, err), x.Close())
	}
	return x, ix, nil
}
