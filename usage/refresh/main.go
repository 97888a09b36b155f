// Command refresh takes the newest (or a given) version of
// @pydantic/genai-prices from npm and writes its price table to
// usage/prices.json, the snapshot sessionlog prices calls with offline:
//
//	go run ./usage/refresh            # the newest version
//	go run ./usage/refresh -version 0.1.8
//
// It needs npm and node on PATH, and is run from the repository's root.
// Only what pricing reads is kept: each provider's id, matches and
// fallbacks, and each model's id, match and prices.
package main

import (
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed dump.mjs
var dumpScript []byte

const pkg = "@pydantic/genai-prices"

func main() {
	version := flag.String("version", "latest", "the version of "+pkg+" to take")
	out := flag.String("o", "usage/prices.json", "where to write the snapshot")
	flag.Parse()
	if err := run(*version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "refresh:", err)
		os.Exit(1)
	}
}

func run(version, out string) error {
	dir, err := os.MkdirTemp("", "genai-prices-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := pkg + "@" + version
	meta, err := exec.Command("npm", "view", spec, "version", "time", "--json").Output()
	if err != nil {
		return fmt.Errorf("npm view %s: %w", spec, err)
	}
	var info struct {
		Version string            `json:"version"`
		Time    map[string]string `json:"time"`
	}
	if err := json.Unmarshal(meta, &info); err != nil {
		return fmt.Errorf("npm view %s: %w", spec, err)
	}
	pack := exec.Command("npm", "pack", "--silent", pkg+"@"+info.Version)
	pack.Dir = dir
	tgz, err := pack.Output()
	if err != nil {
		return fmt.Errorf("npm pack: %w", err)
	}
	if err := exec.Command("tar", "-xzf", filepath.Join(dir, strings.TrimSpace(string(tgz))), "-C", dir).Run(); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	script := filepath.Join(dir, "dump.mjs")
	if err := os.WriteFile(script, dumpScript, 0o600); err != nil {
		return err
	}
	raw, err := exec.Command("node", script, filepath.Join(dir, "package", "dist", "index.js")).Output()
	if err != nil {
		return fmt.Errorf("read the table: %w", err)
	}
	var providers []map[string]any
	if err := json.Unmarshal(raw, &providers); err != nil {
		return fmt.Errorf("read the table: %w", err)
	}
	keep := func(m map[string]any, keys ...string) map[string]any {
		o := map[string]any{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				o[k] = v
			}
		}
		return o
	}
	var kept []map[string]any
	for _, p := range providers {
		q := keep(p, "id", "model_match", "provider_match", "fallback_model_providers")
		var models []map[string]any
		for _, m := range p["models"].([]any) {
			models = append(models, keep(m.(map[string]any), "id", "match", "prices"))
		}
		q["models"] = models
		kept = append(kept, q)
	}
	published := info.Time[info.Version]
	if len(published) >= 10 {
		published = published[:10]
	}
	data, err := json.MarshalIndent(map[string]any{
		"source": pkg, "version": info.Version, "published": published, "licence": "MIT", "providers": kept,
	}, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s %s (published %s): %d providers written to %s\n", pkg, info.Version, published, len(kept), out)
	return nil
}
