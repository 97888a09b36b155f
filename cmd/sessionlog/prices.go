package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	sluse "github.com/agentcore/sessionlog/usage"
)

// Negotiated prices are files in the data dir, in the format of
// usage.Table.WithOverrides: prices.json for every account of the node,
// prices/<tenant>.json for one tenant (its models before the node's).
// A change takes effect at the next start: the index, which prices calls
// as it takes them in, is then rebuilt.
const pricesFile = "prices.json"

// pricesFor is the price table of a tenant's sessions ("" for the node's
// own account) in dataDir, with the override files that apply.
func pricesFor(dataDir, tenant string) (*sluse.Table, error) {
	t := sluse.Default()
	files := []string{filepath.Join(dataDir, pricesFile)}
	if tenant != "" && filepath.Base(tenant) == tenant && !strings.HasPrefix(tenant, ".") {
		files = append(files, filepath.Join(dataDir, "prices", tenant+".json"))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("prices: %w", err)
		}
		if t, err = t.WithOverrides(data); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return t, nil
}

// runPrices says where prices come from and, for -model, what one costs.
func runPrices(ctx context.Context, e env) error {
	fs := newFlags("prices", e)
	rf := addRepoFlags(fs)
	tenant := fs.String("tenant", "", "the tenant whose negotiated prices (prices/TENANT.json) apply")
	model := fs.String("model", "", "show this model's prices (claude-opus-4-6, gpt-5.5, …)")
	provider := fs.String("provider", "", "the model's provider (anthropic, openai, …), where its name alone is not enough")
	if _, err := parseArgs(fs, e.args, 0, ""); err != nil {
		return err
	}
	dir := rf.data
	t, err := pricesFor(dir, *tenant)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "price table  %s %s, published %s (offline: refreshed by `go run ./usage/refresh`)\n", t.Source, t.Version, t.Published)
	overrides := []string{filepath.Join(dir, pricesFile)}
	if *tenant != "" {
		overrides = append(overrides, filepath.Join(dir, "prices", *tenant+".json"))
	}
	for _, f := range overrides {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintf(e.stdout, "overrides    %s\n", f)
		}
	}
	if *model == "" {
		return nil
	}
	p, ok := t.PricesOf(*provider, *model, time.Now())
	if !ok {
		return fmt.Errorf("prices: %.80q has no price: its calls are counted as unpriced (give one in %s)", *model, filepath.Join(dir, pricesFile))
	}
	fmt.Fprintf(e.stdout, "%s, $ per million tokens now:\n", *model)
	for _, r := range []struct {
		name string
		p    sluse.Price
	}{{"input", p.Input}, {"output", p.Output}, {"cache read", p.CacheRead}, {"cache write", p.CacheWrite}, {"cache write 1h", p.CacheWrite1h}} {
		if !r.p.Set {
			continue
		}
		line := fmt.Sprintf("  %-15s %g", r.name, r.p.Base)
		for _, tr := range r.p.Tiers {
			line += fmt.Sprintf(", %g past %d input tokens", tr.Price, tr.Start)
		}
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}
