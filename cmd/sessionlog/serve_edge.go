package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/stream"
)

// configureEdge makes the node a hub (-leaf-listen) or an edge (-hub).
func (a *apiFlags) configureEdge(cfg *cluster.Config) error {
	if a.hub == "" && (a.syncOnly != "" || a.keepLocal != "") {
		return usageError("-sync-only and -keep-local choose what an edge sends its hub: they need -hub")
	}
	if a.hub == "" && a.leafListen == "" {
		if a.domain != "" {
			cfg.Domain = a.domain
		}
		return nil
	}
	if a.domain == "" {
		return usageError("-hub and -leaf-listen need -domain: this node's JetStream domain, unlike every other node's")
	}
	cfg.Domain, cfg.LeafListen = a.domain, a.leafListen
	if a.leafListen != "" && a.tenants == "" {
		// Without accounts a link would carry every subject: an edge's
		// writes would reach the hub's streams directly, answered by
		// both sides' JetStream.
		return usageError("-leaf-listen needs -tenants: each edge signs in as its tenant's, and its link carries only the sync")
	}
	if a.hub == "" {
		return nil
	}
	if cfg.ServerName == cluster.DefaultConfig("").ServerName {
		// A hub takes one link per server name: every edge its own.
		cfg.ServerName = "sessionlog-" + a.domain
	}
	if a.fromHub != "all" && a.fromHub != "none" {
		return usageError("-from-hub %q: all or none", a.fromHub)
	}
	if err := a.syncRules().Validate(); err != nil {
		return usageError("-sync-only / -keep-local: %v", err)
	}
	user, err := hubUser(a.hubCredentials)
	if err != nil {
		return err
	}
	h := &cluster.HubConfig{Bandwidth: a.hubBandwidth}
	for _, u := range strings.Split(a.hub, ",") {
		u = strings.TrimSpace(u)
		if user != nil {
			p, err := url.Parse(u)
			if err != nil {
				return usageError("-hub %q is not a URL", u)
			}
			p.User = user
			u = p.String()
		}
		h.URLs = append(h.URLs, u)
	}
	cfg.Hub = h
	return nil
}

// hubUser reads user:password from a file readable by its owner alone.
func hubUser(path string) (*url.Userinfo, error) {
	if path == "" {
		return nil, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: others may read it (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name, pw, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	if !ok || name == "" || pw == "" {
		return nil, fmt.Errorf("%s: want user:password", path)
	}
	return url.UserPassword(name, pw), nil
}

// recordRedaction keeps, for the link request, the redaction every
// entry in the data dir went through (redactionInForce).
func (a *apiFlags) recordRedaction(dataDir string, cfg *codec.RedactConfig) error {
	rec, err := redactionInForce(dataDir, cfg)
	if err != nil {
		return err
	}
	a.redaction, err = json.Marshal(rec)
	return err
}

// redactionFile records, in a data dir, the redaction every entry stored
// there went through: what an edge tells its hub when it links.
const redactionFile = "redaction.json"

// redactionInForce is the redaction every entry in dataDir went through,
// given that it is now stored with cfg (nil: none): the first start
// records cfg; each later one keeps only the rules it still has. A data
// dir that holds a store but no record went through none that can be told.
func redactionInForce(dataDir string, cfg *codec.RedactConfig) (codec.RedactConfig, error) {
	var now codec.RedactConfig
	if cfg != nil {
		now = *cfg
	}
	path := filepath.Join(dataDir, redactionFile)
	var rec codec.RedactConfig
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &rec); err != nil {
			return rec, fmt.Errorf("%s: %w (remove it only if every entry here went through the redaction given now)", path, err)
		}
		rec = rec.Common(now)
	case !errors.Is(err, os.ErrNotExist):
		return rec, err
	default:
		if _, serr := os.Stat(filepath.Join(dataDir, "jetstream")); serr != nil {
			rec = now // a new store: everything it will hold goes through now
		}
	}
	out, err := json.Marshal(rec)
	if err != nil {
		return rec, err
	}
	if !bytes.Equal(out, b) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return rec, err
		}
		if err := writeFileAtomic(path, out, 0o600); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// syncRules are the rules of -sync-only and -keep-local.
func (a *apiFlags) syncRules() *stream.SyncRules {
	split := func(s string) []string {
		var out []string
		for _, r := range strings.Split(s, ",") {
			if r = strings.TrimSpace(r); r != "" {
				out = append(out, r)
			}
		}
		return out
	}
	return &stream.SyncRules{Only: split(a.syncOnly), Except: split(a.keepLocal)}
}
